// ANSI escape sequences in build logs. Only what a CI log needs is kept: the 16 foreground
// colours (SGR 30–37, 90–97), bold, and their resets. Every other escape sequence (cursor
// movement, OSC titles and hyperlinks, 256-colour and RGB colours, charset switches) and every
// other control character is removed, so nothing but plain text and a style number ever reaches
// the page — the view renders text nodes, never HTML.

/**
 * A style packed into a small integer: bits 0–4 the foreground (0 default, 1–8 the normal
 * colours 30–37, 9–16 the bright colours 90–97), bit 5 bold.
 */
export type Style = number;

export const DEFAULT_STYLE: Style = 0;
const FG_MASK = 0x1f;
const BOLD = 0x20;

export const fgOf = (s: Style): number => s & FG_MASK;
export const isBold = (s: Style): boolean => (s & BOLD) !== 0;

export interface Segment {
  text: string;
  style: Style;
}

const ESC = 0x1b;

/** Whether the line needs parsing at all (an escape, or a control character other than tab). */
export function hasControl(line: string): boolean {
  for (let i = 0; i < line.length; i++) {
    const c = line.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09) || c === 0x7f || (c >= 0x80 && c <= 0x9f)) return true;
  }
  return false;
}

/** Applies one SGR sequence's parameters ("1;31", "", "38;5;208") to a style. */
export function applySgr(style: Style, params: string): Style {
  if (params === '') return DEFAULT_STYLE;
  const ps = params.split(/[;:]/);
  let s = style;
  for (let i = 0; i < ps.length; i++) {
    const n = ps[i] === '' ? 0 : Number(ps[i]);
    if (!Number.isInteger(n)) continue;
    if (n === 0) s = DEFAULT_STYLE;
    else if (n === 1) s |= BOLD;
    else if (n === 22) s &= ~BOLD;
    else if (n >= 30 && n <= 37) s = (s & ~FG_MASK) | (n - 30 + 1);
    else if (n >= 90 && n <= 97) s = (s & ~FG_MASK) | (n - 90 + 9);
    else if (n === 39) s &= ~FG_MASK;
    else if (n === 38 || n === 48 || n === 58) {
      // Extended colours are not shown, but their arguments must not be read as codes
      // (38;2;1;31;0 is an RGB colour, not bold red).
      const mode = Number(ps[i + 1]);
      if (mode === 5) i += 2;
      else if (mode === 2) i += 4;
      else i += 1;
    }
    // Anything else (background, italic, underline, blink, …) is ignored.
  }
  return s;
}

/**
 * Reads one line of a log: its text split into runs of one style, and the style in force at
 * its end (which carries over to the next line, as in a terminal).
 */
export function parseAnsi(line: string, start: Style = DEFAULT_STYLE): { segments: Segment[]; end: Style } {
  if (!hasControl(line)) return { segments: line ? [{ text: line, style: start }] : [], end: start };
  const segments: Segment[] = [];
  let style = start;
  let text = '';
  const flush = () => {
    if (!text) return;
    const last = segments[segments.length - 1];
    if (last && last.style === style) last.text += text;
    else segments.push({ text, style });
    text = '';
  };
  const n = line.length;
  let i = 0;
  while (i < n) {
    const c = line.charCodeAt(i);
    if (c === ESC || c === 0x9b) {
      const csi = c === 0x9b ? i + 1 : line.charCodeAt(i + 1) === 0x5b /* [ */ ? i + 2 : -1;
      if (csi >= 0) {
        // CSI: parameter bytes 0x30–0x3F, intermediate bytes 0x20–0x2F, one final byte 0x40–0x7E.
        let j = csi;
        while (j < n && line.charCodeAt(j) >= 0x30 && line.charCodeAt(j) <= 0x3f) j++;
        const paramsEnd = j;
        while (j < n && line.charCodeAt(j) >= 0x20 && line.charCodeAt(j) <= 0x2f) j++;
        if (j >= n) break; // cut off: drop the rest
        const final = line.charCodeAt(j);
        if (final === 0x6d /* m */ && paramsEnd === j) {
          const params = line.slice(csi, paramsEnd);
          if (/^[0-9;:]*$/.test(params)) {
            flush();
            style = applySgr(style, params);
          }
        }
        i = j + 1;
        continue;
      }
      const next = line.charCodeAt(i + 1);
      if (next === 0x5d /* ] OSC */ || next === 0x50 /* P DCS */ || next === 0x58 || next === 0x5e || next === 0x5f) {
        // A string sequence: up to BEL or ST (ESC \). The text of an OSC 8 link stays (it comes
        // after the sequence), its URL does not.
        let j = i + 2;
        while (j < n) {
          const d = line.charCodeAt(j);
          if (d === 0x07) {
            j += 1;
            break;
          }
          if (d === ESC && line.charCodeAt(j + 1) === 0x5c) {
            j += 2;
            break;
          }
          j++;
        }
        i = j;
        continue;
      }
      // ESC, intermediates 0x20–0x2F, one final byte (ESC ( B, ESC =, ESC 7, …).
      let j = i + 1;
      while (j < n && line.charCodeAt(j) >= 0x20 && line.charCodeAt(j) <= 0x2f) j++;
      i = j < n ? j + 1 : n;
      continue;
    }
    if ((c < 0x20 && c !== 0x09) || c === 0x7f || (c >= 0x80 && c <= 0x9f)) {
      i++; // other control characters: BEL, backspace, form feed, …
      continue;
    }
    // A run of ordinary characters.
    let j = i + 1;
    while (j < n) {
      const d = line.charCodeAt(j);
      if ((d < 0x20 && d !== 0x09) || d === 0x7f || (d >= 0x80 && d <= 0x9f)) break;
      j++;
    }
    text += line.slice(i, j);
    i = j;
  }
  flush();
  return { segments, end: style };
}

/** The style at the end of a line: parseAnsi without keeping the text. */
export function endStyle(line: string, start: Style): Style {
  if (line.indexOf('\x1b') < 0 && line.indexOf('\x9b') < 0) return start;
  return parseAnsi(line, start).end;
}

/** The line's text as shown: escapes and control characters removed. */
export function stripAnsi(line: string): string {
  if (!hasControl(line)) return line;
  let s = '';
  for (const seg of parseAnsi(line).segments) s += seg.text;
  return s;
}

/**
 * CSS classes for a style: .ansi-fg-0 … .ansi-fg-15 by ANSI colour number (0–7 normal, 8–15
 * bright; colours come from the theme) and .ansi-bold.
 */
export function styleClass(s: Style): string {
  const fg = fgOf(s);
  const parts: string[] = [];
  if (fg) parts.push(`ansi-fg-${fg - 1}`);
  if (isBold(s)) parts.push('ansi-bold');
  return parts.join(' ');
}
