import { describe, expect, it } from 'vitest';
import { fgOf } from './ansi';
import { LogBuffer, overwrite } from './logBuffer';

const lines = (b: LogBuffer) => Array.from({ length: b.count }, (_, i) => b.line(i));

describe('LogBuffer', () => {
  const text = 'first line\r\nsecond ünïcödé 😀\n\x1b[32mgreen\nstill green\x1b[0m\nprogress 10%\rprogress 100%\nlast without newline';
  const bytes = new TextEncoder().encode(text);
  const want = ['first line', 'second ünïcödé 😀', '\x1b[32mgreen', 'still green\x1b[0m', 'progress 100%', 'last without newline'];

  it('splits lines however the bytes are chunked, even inside a UTF-8 character or a \\r\\n', () => {
    for (let cut = 0; cut <= bytes.length; cut++) {
      const b = new LogBuffer();
      b.append(bytes.subarray(0, cut));
      b.append(bytes.subarray(cut));
      expect(lines(b)).toEqual(want);
    }
    const one = new LogBuffer();
    for (const x of bytes) one.append(new Uint8Array([x]));
    expect(lines(one)).toEqual(want);
    expect(one.bytes).toBe(bytes.length);
  });

  it('shows the unfinished last line, and counts it', () => {
    const b = new LogBuffer();
    expect(b.append(new TextEncoder().encode('a\nb'))).toBe(1);
    expect(b.count).toBe(2);
    expect(b.completeLines).toBe(1);
    expect(b.line(1)).toBe('b');
    b.append(new TextEncoder().encode('c\n'));
    expect(lines(b)).toEqual(['a', 'bc']);
    b.finish();
    expect(b.count).toBe(2);
  });

  it('knows the style each line starts with', () => {
    const b = new LogBuffer();
    b.append(new TextEncoder().encode(text));
    expect(fgOf(b.startStyle(2))).toBe(0);
    expect(fgOf(b.startStyle(3))).toBe(3);
    expect(fgOf(b.startStyle(4))).toBe(0);
    expect(b.plain(2)).toBe('green');
    expect(b.text().split('\n')[3]).toBe('still green');
  });

  it('handles 100,000 lines in one go', () => {
    const b = new LogBuffer();
    const big = Array.from({ length: 100_000 }, (_, i) => String(i + 1)).join('\n') + '\n';
    const t = performance.now();
    b.append(new TextEncoder().encode(big));
    expect(b.count).toBe(100_000);
    expect(b.line(99_999)).toBe('100000');
    expect(performance.now() - t).toBeLessThan(2000);
  });
});

describe('overwrite', () => {
  it('keeps what a terminal shows last after carriage returns', () => {
    expect(overwrite('50%\r100%')).toBe('100%');
    expect(overwrite('abc\r')).toBe('abc');
    expect(overwrite('plain')).toBe('plain');
  });
});
