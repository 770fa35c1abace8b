import { describe, expect, it } from 'vitest';
import { DEFAULT_STYLE, applySgr, fgOf, isBold, parseAnsi, stripAnsi, styleClass } from './ansi';

const seg = (line: string, start = DEFAULT_STYLE) => parseAnsi(line, start).segments.map((s) => [s.text, styleClass(s.style)]);

describe('parseAnsi', () => {
  it('keeps plain lines whole', () => {
    expect(seg('hello world\t!')).toEqual([['hello world\t!', '']]);
    expect(parseAnsi('').segments).toEqual([]);
  });

  it('reads the 16 foreground colours, bold and resets', () => {
    expect(seg('\x1b[31mred\x1b[0m plain')).toEqual([
      ['red', 'ansi-fg-1'],
      [' plain', ''],
    ]);
    expect(seg('\x1b[1;32mbold green\x1b[22mgreen\x1b[39mplain')).toEqual([
      ['bold green', 'ansi-fg-2 ansi-bold'],
      ['green', 'ansi-fg-2'],
      ['plain', ''],
    ]);
    expect(seg('\x1b[97mwhite\x1b[90mgrey\x1b[mreset')).toEqual([
      ['white', 'ansi-fg-15'],
      ['grey', 'ansi-fg-8'],
      ['reset', ''],
    ]);
  });

  it('nests: bold stays when the colour changes, a later colour replaces the earlier', () => {
    expect(seg('\x1b[1m\x1b[34mA\x1b[35mB\x1b[0mC')).toEqual([
      ['A', 'ansi-fg-4 ansi-bold'],
      ['B', 'ansi-fg-5 ansi-bold'],
      ['C', ''],
    ]);
  });

  it('carries the style across lines and reports where the line ends', () => {
    const a = parseAnsi('\x1b[33mstart');
    expect(fgOf(a.end)).toBe(4);
    expect(seg('next', a.end)).toEqual([['next', 'ansi-fg-3']]);
  });

  it('ignores unknown SGR codes and the arguments of extended colours', () => {
    expect(seg('\x1b[4;3;5;41mx')).toEqual([['x', '']]);
    // 38;2;1;31;0 is an RGB colour: neither bold (1) nor red (31).
    expect(seg('\x1b[38;2;1;31;0mx')).toEqual([['x', '']]);
    expect(seg('\x1b[38;5;1;32mx')).toEqual([['x', 'ansi-fg-2']]);
    expect(applySgr(DEFAULT_STYLE, 'x;1')).toBe(applySgr(DEFAULT_STYLE, '1'));
  });

  it('strips other escapes: cursor moves, erase, OSC titles and links, charsets, lone ESC', () => {
    expect(stripAnsi('\x1b[2K\x1b[1Gdone')).toBe('done');
    expect(stripAnsi('\x1b]0;title\x07text')).toBe('text');
    expect(stripAnsi('\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\')).toBe('link');
    expect(stripAnsi('\x1b(Bx\x1b=y\x1b7z')).toBe('xyz');
    expect(stripAnsi('end\x1b')).toBe('end');
    expect(stripAnsi('cut\x1b[3')).toBe('cut');
    expect(stripAnsi('a\x07b\x08c\x00d')).toBe('abcd');
    expect(stripAnsi('\x1b[?25lhidden cursor\x1b[?25h')).toBe('hidden cursor');
  });

  it('never lets markup through as anything but text', () => {
    const line = '\x1b[31m<img src=x onerror=alert(1)>\x1b[0m<script>alert(2)</script>';
    const s = parseAnsi(line).segments;
    expect(s.map((x) => x.text).join('')).toBe('<img src=x onerror=alert(1)><script>alert(2)</script>');
    // Styles are numbers that map to a fixed set of class names, never text from the log.
    for (const x of s) expect(styleClass(x.style)).toMatch(/^(ansi-fg-\d+)?( ?ansi-bold)?$/);
    // A malformed sequence ends at its first final byte; what follows is text, unstyled.
    expect(seg('\x1b[31;"onload="x"mA')).toEqual([['nload="x"mA', '']]);
  });

  it('packs styles into small numbers', () => {
    const s = applySgr(DEFAULT_STYLE, '1;96');
    expect(isBold(s)).toBe(true);
    expect(fgOf(s)).toBe(15);
  });
});
