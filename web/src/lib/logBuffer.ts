// A build log as it arrives: bytes in chunks that may end anywhere (inside a line, inside a
// UTF-8 character, between \r and \n), turned into lines. The view reads lines by index, so a
// 100,000-line log costs one array of strings and one array of start styles.
import { DEFAULT_STYLE, endStyle, stripAnsi, type Style } from './ansi';

export class LogBuffer {
  /** Complete lines, without their line break; \r overwrites are resolved. */
  private readonly lines: string[] = [];
  /** The ANSI style in force at the start of each complete line. */
  private readonly starts: Style[] = [];
  /** The text after the last line break: shown as the last line while the log grows. */
  private partial = '';
  private style: Style = DEFAULT_STYLE;
  private decoder = new TextDecoder('utf-8');
  /** Bytes appended so far. */
  bytes = 0;
  /** Changes on every append, for views that redraw. */
  version = 0;

  /** Adds a chunk of the log; returns how many lines it completed. */
  append(chunk: Uint8Array | string): number {
    const text = typeof chunk === 'string' ? chunk : this.decoder.decode(chunk, { stream: true });
    this.bytes += chunk.length;
    if (!text) return 0;
    this.version++;
    let from = 0;
    let added = 0;
    let nl = text.indexOf('\n');
    if (nl < 0) {
      this.partial += text;
      return 0;
    }
    while (nl >= 0) {
      const piece = text.slice(from, nl);
      const line = this.partial ? this.partial + piece : piece;
      this.partial = '';
      this.push(line);
      added++;
      from = nl + 1;
      nl = text.indexOf('\n', from);
    }
    this.partial = text.slice(from);
    return added;
  }

  /** The log is complete: flush a last line without a line break. */
  finish(): void {
    const rest = this.decoder.decode();
    if (rest) this.partial += rest;
    this.decoder = new TextDecoder('utf-8');
    this.version++;
  }

  private push(raw: string) {
    let line = raw;
    if (line.endsWith('\r')) line = line.slice(0, -1);
    // A carriage return inside a line (progress bars) goes back to its start: the terminal
    // shows what was written last.
    if (line.indexOf('\r') >= 0) line = overwrite(line);
    this.starts.push(this.style);
    this.lines.push(line);
    // Escapes in overwritten text still applied in the terminal.
    this.style = endStyle(raw, this.style);
  }

  /** Lines to show, counting the unfinished last one. */
  get count(): number {
    return this.lines.length + (this.partial ? 1 : 0);
  }

  /** Complete lines only. */
  get completeLines(): number {
    return this.lines.length;
  }

  line(i: number): string {
    if (i < this.lines.length) return this.lines[i];
    if (i === this.lines.length && this.partial) return overwrite(this.partial.endsWith('\r') ? this.partial.slice(0, -1) : this.partial);
    return '';
  }

  startStyle(i: number): Style {
    return i < this.starts.length ? this.starts[i] : this.style;
  }

  /** The line as plain text (escapes removed), for search and copy. */
  plain(i: number): string {
    return stripAnsi(this.line(i));
  }

  /** The whole log as plain text. */
  text(): string {
    const out: string[] = new Array(this.count);
    for (let i = 0; i < out.length; i++) out[i] = this.plain(i);
    return out.join('\n');
  }
}

/**
 * "50%\r100%" → "100%": a \r inside a line returns to its start, so a progress bar shows its
 * last state. The last non-empty part is kept whole (cutting parts at a column could split an
 * escape sequence into visible text).
 */
export function overwrite(line: string): string {
  if (line.indexOf('\r') < 0) return line;
  const parts = line.split('\r');
  for (let i = parts.length - 1; i >= 0; i--) if (parts[i]) return parts[i];
  return '';
}
