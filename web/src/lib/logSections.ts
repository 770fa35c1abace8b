// A build log's step sections: the runner starts each attempt of a step with a line
// "[freshet] step NAME (TYPE) attempt K/N"; a section runs from there to the next such line.
// (Steps of a parallel group write side by side: their sections hold what was written between
// their start lines.) The log view folds a section to its start line; rows then map to lines.

export interface LogSection {
  /** The step's name. */
  name: string;
  /** The line (0-based) that starts it. */
  start: number;
  attempt: number;
  attempts: number;
}

const START_RE = /^\[freshet\] step (\S+) \(([\w-]+)\) attempt (\d+)\/(\d+)\s*$/;

/** The section a plain (colourless) line starts, if it starts one. */
export function sectionStart(plain: string, line: number): LogSection | undefined {
  const m = START_RE.exec(plain);
  return m ? { name: m[1], start: line, attempt: Number(m[3]), attempts: Number(m[4]) } : undefined;
}

/** Appends the sections that lines [from, to) start to `into`; returns `into`. */
export function scanSections(into: LogSection[], from: number, to: number, plain: (i: number) => string): LogSection[] {
  for (let i = from; i < to; i++) {
    const s = sectionStart(plain(i), i);
    if (s) into.push(s);
  }
  return into;
}

/** The end (exclusive) of section k: where the next starts, or the log's end. */
export function sectionEnd(sections: readonly LogSection[], k: number, count: number): number {
  return k + 1 < sections.length ? sections[k + 1].start : count;
}

/**
 * The lines shown, in order, when the sections starting at `folded` lines are folded (their
 * start line stays); undefined when nothing is folded (row i is line i).
 */
export function visibleLines(sections: readonly LogSection[], count: number, folded: ReadonlySet<number>): number[] | undefined {
  if (folded.size === 0) return undefined;
  const out: number[] = [];
  let next = 0;
  for (let k = 0; k < sections.length; k++) {
    const s = sections[k];
    if (!folded.has(s.start)) continue;
    for (let i = next; i <= s.start && i < count; i++) out.push(i);
    next = sectionEnd(sections, k, count);
  }
  for (let i = next; i < count; i++) out.push(i);
  return out;
}

/** The row showing `line` (or, if it is folded away, the row of the fold that hides it). */
export function rowOfLine(rows: readonly number[] | undefined, line: number): number {
  if (!rows) return line;
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (rows[mid] < line) lo = mid + 1;
    else hi = mid;
  }
  return lo < rows.length && rows[lo] === line ? lo : Math.max(0, lo - 1);
}

/** The section that line belongs to (the last start at or before it), or -1. */
export function sectionOf(sections: readonly LogSection[], line: number): number {
  let lo = 0;
  let hi = sections.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sections[mid].start <= line) lo = mid + 1;
    else hi = mid;
  }
  return lo - 1;
}
