// Lint problems of a pipeline spec (POST /api/v1/pipelines/lint) placed on the editor's lines.

export type Severity = 'error' | 'warning';

export interface LintIssue {
  /** 1-based; 0 when the problem has no position (then it belongs to line 1). */
  line: number;
  /** 1-based; 0 when unknown. */
  column: number;
  field?: string;
  message: string;
  severity: Severity;
}

export interface LineMark {
  severity: Severity;
  issues: LintIssue[];
}

/** The line an issue is shown at: within the text, at least line 1. */
export function issueLine(issue: LintIssue, lineCount: number): number {
  const n = Math.max(1, lineCount);
  if (!Number.isFinite(issue.line) || issue.line < 1) return 1;
  return Math.min(Math.floor(issue.line), n);
}

/** Issues by line (1-based), each line marked with its worst severity. */
export function marksByLine(issues: LintIssue[], lineCount: number): Map<number, LineMark> {
  const out = new Map<number, LineMark>();
  for (const is of sortIssues(issues)) {
    const line = issueLine(is, lineCount);
    const m = out.get(line);
    if (m) {
      m.issues.push(is);
      if (is.severity === 'error') m.severity = 'error';
    } else {
      out.set(line, { severity: is.severity === 'error' ? 'error' : 'warning', issues: [is] });
    }
  }
  return out;
}

/** Errors first, then by position. */
export function sortIssues(issues: LintIssue[]): LintIssue[] {
  return issues.slice().sort((a, b) => (a.severity === b.severity ? 0 : a.severity === 'error' ? -1 : 1) || a.line - b.line || a.column - b.column);
}

/** "2 errors, 1 warning", or "No problems". */
export function summarize(issues: LintIssue[]): string {
  const e = issues.filter((i) => i.severity === 'error').length;
  const w = issues.length - e;
  if (!e && !w) return 'No problems';
  const parts: string[] = [];
  if (e) parts.push(`${e} error${e === 1 ? '' : 's'}`);
  if (w) parts.push(`${w} warning${w === 1 ? '' : 's'}`);
  return parts.join(', ');
}

/** The character offset of a 1-based line and column in text (clamped to the text). */
export function offsetOf(text: string, line: number, column = 1): number {
  let off = 0;
  for (let l = 1; l < line; l++) {
    const nl = text.indexOf('\n', off);
    if (nl < 0) return text.length;
    off = nl + 1;
  }
  const end = text.indexOf('\n', off);
  const lineEnd = end < 0 ? text.length : end;
  return Math.min(off + Math.max(0, column - 1), lineEnd);
}

/** The 1-based line of a character offset. */
export function lineOf(text: string, offset: number): number {
  let line = 1;
  const stop = Math.min(offset, text.length);
  for (let i = 0; i < stop; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** Number of lines in text (an empty text has one). */
export function countLines(text: string): number {
  let n = 1;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/** The issue as one line of text: "line 4, column 5 · steps.a.imagee: is not a field…". */
export function describeIssue(i: LintIssue): string {
  const where = i.line > 0 ? `line ${i.line}${i.column > 0 ? `, column ${i.column}` : ''}` : 'whole spec';
  return `${where} · ${i.field ? i.field + ': ' : ''}${i.message}`;
}
