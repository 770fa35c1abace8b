// Unified diffs (as the engine writes them, live → desired) split into classified lines with
// their line numbers, for green/red rendering. Inside a hunk the header's counts decide what
// a line is, so a removed line that reads "-- x" or an added "++ y" is not taken for a header.

export type DiffLineKind = 'file' | 'hunk' | 'add' | 'del' | 'context' | 'meta';

export interface DiffLine {
  kind: DiffLineKind;
  text: string;
  /** Line number in the old (live) text: del and context lines. */
  old?: number;
  /** Line number in the new (desired) text: add and context lines. */
  new?: number;
}

const HUNK = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@/;

export function parseUnifiedDiff(text: string): DiffLine[] {
  const src = text.replace(/\r\n/g, '\n').split('\n');
  if (src.length && src[src.length - 1] === '') src.pop();
  const out: DiffLine[] = [];
  let oldNo = 0;
  let newNo = 0;
  let oldLeft = 0;
  let newLeft = 0;
  for (const line of src) {
    const inHunk = oldLeft > 0 || newLeft > 0;
    if (inHunk) {
      const c = line[0];
      if (c === '+' && newLeft > 0) {
        out.push({ kind: 'add', text: line.slice(1), new: newNo++ });
        newLeft--;
        continue;
      }
      if (c === '-' && oldLeft > 0) {
        out.push({ kind: 'del', text: line.slice(1), old: oldNo++ });
        oldLeft--;
        continue;
      }
      if ((c === ' ' || line === '') && oldLeft > 0 && newLeft > 0) {
        // An empty line in a hunk is a context line whose leading space was trimmed.
        out.push({ kind: 'context', text: line.slice(1), old: oldNo++, new: newNo++ });
        oldLeft--;
        newLeft--;
        continue;
      }
      if (c === '\\') {
        out.push({ kind: 'meta', text: line });
        continue;
      }
      // The counts do not fit: the hunk ended early; read on as outside one.
      oldLeft = newLeft = 0;
    }
    const m = HUNK.exec(line);
    if (m) {
      oldNo = Number(m[1]);
      newNo = Number(m[3]);
      oldLeft = m[2] === undefined ? 1 : Number(m[2]);
      newLeft = m[4] === undefined ? 1 : Number(m[4]);
      // "-0,0" means nothing on that side (a created object): no old line numbers follow.
      oldNo ||= 1;
      newNo ||= 1;
      out.push({ kind: 'hunk', text: line });
    } else if (line.startsWith('--- ') || line.startsWith('+++ ') || line.startsWith('diff ') || line.startsWith('index ')) {
      out.push({ kind: 'file', text: line });
    } else if (line.startsWith('\\')) {
      out.push({ kind: 'meta', text: line });
    } else {
      out.push({ kind: 'context', text: line.startsWith(' ') ? line.slice(1) : line });
    }
  }
  return out;
}

/** Lines added and removed. */
export function diffStats(lines: DiffLine[]): { added: number; removed: number } {
  let added = 0;
  let removed = 0;
  for (const l of lines) {
    if (l.kind === 'add') added++;
    else if (l.kind === 'del') removed++;
  }
  return { added, removed };
}

/** Only resources that differ: a diff, or a status other than Synced. */
export function differing<T extends { status: string; diff?: string }>(items: T[]): T[] {
  return items.filter((d) => d.status !== 'Synced' || !!d.diff);
}

// ─── Views of the same lines: side by side, and compact ───

/** The diff tab's views (?diff=unified|split|compact; unified when absent or unknown). */
export type DiffMode = 'unified' | 'split' | 'compact';
export const DIFF_MODES: readonly DiffMode[] = ['unified', 'split', 'compact'];

export function diffModeFrom(v: string | null | undefined): DiffMode {
  return v && (DIFF_MODES as readonly string[]).includes(v) ? (v as DiffMode) : 'unified';
}

/**
 * One row of the side-by-side view: a line of the old (live) text on the left and of the new
 * (desired) on the right, or a header (file, hunk, note) across both.
 */
export type SplitRow = { kind: 'pair'; left?: DiffLine; right?: DiffLine } | { kind: 'full'; line: DiffLine };

/**
 * The lines side by side: a context line on both sides; within each run of changes, the n-th
 * removed line beside the n-th added one (a changed line reads across), the longer side's
 * rest against nothing; headers and "no newline" notes across both.
 */
export function toSplitRows(lines: readonly DiffLine[]): SplitRow[] {
  const out: SplitRow[] = [];
  let dels: DiffLine[] = [];
  let adds: DiffLine[] = [];
  const flush = () => {
    for (let i = 0; i < Math.max(dels.length, adds.length); i++) out.push({ kind: 'pair', left: dels[i], right: adds[i] });
    dels = [];
    adds = [];
  };
  for (const l of lines) {
    if (l.kind === 'del') {
      // A removal after additions starts a new run: its lines do not belong beside those.
      if (adds.length) flush();
      dels.push(l);
    } else if (l.kind === 'add') {
      adds.push(l);
    } else if (l.kind === 'meta' && (dels.length || adds.length)) {
      // "\ No newline at end of file" belongs to the run it follows; it does not end it.
      continue;
    } else {
      flush();
      out.push(l.kind === 'context' ? { kind: 'pair', left: l, right: l } : { kind: 'full', line: l });
    }
  }
  flush();
  return out;
}

/** Unchanged lines the compact view hides, and where they start in the whole list. */
export interface DiffFold {
  kind: 'fold';
  /** Index of the first hidden line in the lines compactLines was given: a stable key. */
  start: number;
  lines: DiffLine[];
}

/**
 * The compact view: changed lines with up to `context` unchanged lines before and after each
 * run of changes; longer runs of unchanged lines become one fold (expanded by the reader). A
 * run is folded only when that hides at least two lines. Headers (file, hunk) and notes are
 * kept and bound the runs.
 */
export function compactLines(lines: readonly DiffLine[], context = 3): (DiffLine | DiffFold)[] {
  const out: (DiffLine | DiffFold)[] = [];
  const ctx = Math.max(0, Math.floor(context));
  let i = 0;
  while (i < lines.length) {
    if (lines[i].kind !== 'context') {
      out.push(lines[i++]);
      continue;
    }
    let j = i;
    while (j < lines.length && lines[j].kind === 'context') j++;
    // lines[i..j) unchanged: keep ctx after a change before it and ctx before a change after it.
    const changeBefore = isChange(lines, i - 1, -1);
    const changeAfter = isChange(lines, j, 1);
    const head = changeBefore ? Math.min(ctx, j - i) : 0;
    const tail = changeAfter ? Math.min(ctx, j - i - head) : 0;
    const hidden = j - i - head - tail;
    if (hidden < 2) {
      for (let k = i; k < j; k++) out.push(lines[k]);
    } else {
      for (let k = i; k < i + head; k++) out.push(lines[k]);
      out.push({ kind: 'fold', start: i + head, lines: lines.slice(i + head, j - tail) });
      for (let k = j - tail; k < j; k++) out.push(lines[k]);
    }
    i = j;
  }
  return out;
}

/** Is the line at i (past any "no newline" notes, going step) an added or removed one? */
function isChange(lines: readonly DiffLine[], i: number, step: 1 | -1): boolean {
  while (i >= 0 && i < lines.length && lines[i].kind === 'meta') i += step;
  const k = lines[i]?.kind;
  return k === 'add' || k === 'del';
}
