// Search in a build log: every match of a plain-text query (case-insensitive) in the lines as
// shown (escapes removed), as line and character range, for highlighting and next/previous.

export interface Match {
  line: number;
  start: number;
  end: number;
}

/** At most this many matches are kept; the count says "10,000+" beyond. */
export const MAX_MATCHES = 10_000;

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Finds the matches of `query` in lines [from, count) of a log. `plain(i)` gives line i without
 * escapes. Returns the matches and whether the limit cut them.
 */
export function findMatches(plain: (i: number) => string, count: number, query: string, from = 0, limit = MAX_MATCHES): { matches: Match[]; more: boolean } {
  const matches: Match[] = [];
  if (!query) return { matches, more: false };
  const re = new RegExp(escapeRegExp(query), 'gi');
  for (let i = from; i < count; i++) {
    const text = plain(i);
    if (text.length < query.length) continue;
    re.lastIndex = 0;
    let m: RegExpExecArray | null;
    while ((m = re.exec(text)) !== null) {
      if (matches.length >= limit) return { matches, more: true };
      matches.push({ line: i, start: m.index, end: m.index + m[0].length });
    }
  }
  return { matches, more: false };
}

/** Index of the first match at or after line `line` (wrapping to 0), for "find from here". */
export function firstMatchFrom(matches: Match[], line: number): number {
  if (matches.length === 0) return -1;
  let lo = 0;
  let hi = matches.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (matches[mid].line < line) lo = mid + 1;
    else hi = mid;
  }
  return lo < matches.length ? lo : 0;
}

/** The next (dir 1) or previous (dir −1) match index, wrapping around. */
export function stepMatch(current: number, count: number, dir: 1 | -1): number {
  if (count === 0) return -1;
  if (current < 0) return dir === 1 ? 0 : count - 1;
  return (current + dir + count) % count;
}

/**
 * Splits a line's styled segments at match boundaries, so each piece is entirely inside or
 * outside a match. `ranges` are [start, end) in the line's plain text, sorted, not overlapping;
 * `mark` is the index into ranges (or −1) of each piece.
 */
export function splitForHighlight<S extends { text: string }>(segments: S[], ranges: { start: number; end: number }[]): { seg: S; text: string; mark: number }[] {
  const out: { seg: S; text: string; mark: number }[] = [];
  let pos = 0;
  let r = 0;
  for (const seg of segments) {
    let i = 0;
    const len = seg.text.length;
    while (i < len) {
      const at = pos + i;
      while (r < ranges.length && ranges[r].end <= at) r++;
      const range = ranges[r];
      if (range && range.start <= at) {
        const stop = Math.min(len, range.end - pos);
        out.push({ seg, text: seg.text.slice(i, stop), mark: r });
        i = stop;
      } else {
        const stop = range ? Math.min(len, range.start - pos) : len;
        out.push({ seg, text: seg.text.slice(i, stop), mark: -1 });
        i = stop;
      }
    }
    pos += len;
  }
  return out;
}
