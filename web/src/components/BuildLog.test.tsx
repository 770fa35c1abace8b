import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { parseAnsi } from '../lib/ansi';
import { LogRow, foldInfo } from './BuildLog';

const row = (line: string, extra: Partial<Parameters<typeof LogRow>[0]> = {}) =>
  renderToStaticMarkup(<LogRow index={41} line={line} start={0} matches={[]} mFrom={0} mTo={0} current={-1} focused={false} {...extra} />);

describe('LogRow', () => {
  it('renders colours as classes and markup from the log as text', () => {
    const html = row('\x1b[1;31m<img src=x onerror=alert(1)>\x1b[0m & <script>alert(2)</script>');
    expect(html).toContain('<span class="ansi-fg-1 ansi-bold">&lt;img src=x onerror=alert(1)&gt;</span>');
    expect(html).toContain(' &amp; &lt;script&gt;alert(2)&lt;/script&gt;');
    expect(html).not.toContain('<img');
    expect(html).not.toContain('<script');
    expect(html).toContain('data-line="42"');
    expect(html).toContain('href="#L42"');
  });

  it('marks search matches, the current one apart, across colour changes', () => {
    const line = '\x1b[32mok\x1b[0m error error';
    const matches = [
      { line: 41, start: 3, end: 8 },
      { line: 41, start: 9, end: 14 },
    ];
    const html = row(line, { matches, mFrom: 0, mTo: 2, current: 1 });
    expect(html).toContain('<span class="ansi-fg-2">ok</span>');
    expect(html).toContain('<mark class="log-hit">error</mark>');
    expect(html).toContain('<mark class="log-hit log-hit-current">error</mark>');
    expect(parseAnsi(line).segments.map((s) => s.text).join('')).toBe('ok error error');
  });

  it('starts with the style the previous line left open', () => {
    expect(row('still red', { start: parseAnsi('\x1b[31mred').end })).toContain('<span class="ansi-fg-1">still red</span>');
  });
});

describe('step section rows', () => {
  const sec = { name: 'unit', start: 9, attempt: 1, attempts: 2 };
  const step = { name: 'unit', status: 'success', exitCode: 0, attempts: 1, startedAt: '2026-01-01T10:00:00Z', finishedAt: '2026-01-01T10:00:04.200Z' };

  it('draws a fold button and the step state, start and duration on its start line, at its row', () => {
    const fold = foldInfo(sec, 12, false, step, 'Unit tests', () => {});
    expect(fold.meta).toMatch(/^success · started \d\d:\d\d:\d\d · 4\.2 s · attempt 1 of 2$/);
    const html = renderToStaticMarkup(<LogRow index={9} pos={3} fold={fold} line="[freshet] step unit (freestyle) attempt 1/2" start={0} matches={[]} mFrom={0} mTo={0} current={-1} focused={false} />);
    expect(html).toContain('aria-expanded="true"');
    expect(html).toContain('aria-label="Collapse step unit"');
    expect(html).toContain('translateY(60px)');
    expect(html).toContain('data-line="10"');
    expect(html).toContain('<strong>Unit tests</strong>');
  });

  it('says how many lines a folded section hides', () => {
    const fold = foldInfo(sec, 12, true, undefined, undefined, () => {});
    expect(fold.meta).toBe('attempt 1 of 2 · 12 lines folded');
    const html = renderToStaticMarkup(<LogRow index={9} fold={fold} line="x" start={0} matches={[]} mFrom={0} mTo={0} current={-1} focused={false} />);
    expect(html).toContain('aria-label="Expand step unit"');
    expect(html).toContain('data-folded="true"');
  });
});
