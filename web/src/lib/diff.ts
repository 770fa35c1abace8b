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
