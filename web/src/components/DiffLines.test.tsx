import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { parseUnifiedDiff } from '../lib/diff';
import { DiffLines } from './DiffLines';

const long = ['@@ -1,20 +1,20 @@', ...Array.from({ length: 20 }, (_, i) => (i === 9 ? '-line 10\n+line 10 changed' : ` line ${i + 1}`))].join('\n');
const lines = parseUnifiedDiff(long);
const rows = (html: string) => (html.match(/role="row"/g) ?? []).length;

describe('DiffLines', () => {
  it('unified: every line a row', () => {
    const html = renderToStaticMarkup(<DiffLines lines={lines} label="Diff of ConfigMap/x" />);
    expect(html).toContain('data-mode="unified"');
    expect(rows(html)).toBe(lines.length);
  });

  it('compact: the change with three lines each side, the rest behind buttons naming how many', () => {
    const html = renderToStaticMarkup(<DiffLines lines={lines} label="Diff of ConfigMap/x" mode="compact" />);
    expect(html).toContain('data-mode="compact"');
    expect(html).toContain('aria-label="Show 6 unchanged lines"');
    expect(html).toContain('aria-label="Show 7 unchanged lines"');
    expect(html).not.toContain('line 6<');
    expect(html).toContain('line 7<');
    expect(html).toContain('line 13<');
    expect(html).not.toContain('line 14<');
    // hunk, 2 folds, 3 + 2 + 3 lines
    expect(rows(html)).toBe(11);
  });

  it('split: live and desired side by side, a header row for screen readers', () => {
    const html = renderToStaticMarkup(<DiffLines lines={lines} label="Diff of ConfigMap/x" mode="split" />);
    expect(html).toContain('data-mode="split"');
    expect(html).toContain('>Live<');
    expect(html).toContain('>Desired<');
    // header + hunk + 20 pairs (the changed line is one row)
    expect(rows(html)).toBe(22);
    expect(html).toMatch(/line 10<\/span>.*line 10 changed/);
  });
});
