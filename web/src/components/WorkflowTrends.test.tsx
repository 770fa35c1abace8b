import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { WorkflowRunStats } from '../api/workflows';
import { WorkflowRunChart, runSuccessRate, runsSummary } from './WorkflowTrends';

const stats: WorkflowRunStats = {
  since: '2026-11-25T00:00:00Z',
  until: '2026-11-27T10:00:00Z',
  days: [
    { date: '2026-11-25', succeeded: 3, failed: 1, error: 0 },
    { date: '2026-11-26', succeeded: 0, failed: 0, error: 0 },
    { date: '2026-11-27', succeeded: 1, failed: 0, error: 1 },
  ],
};

/** The rows of the chart's table, as cell texts. */
function tableRows(html: string): string[][] {
  const body = html.slice(html.indexOf('<tbody>'), html.indexOf('</tbody>'));
  const text = (h: string) => h.replace(/<[^>]*>/g, '');
  return [...body.matchAll(/<tr>(.*?)<\/tr>/g)].map((m) => [...m[1].matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/g)].map((c) => text(c[1])));
}

describe("Home's Delivery Pipelines runs", () => {
  it('draws runs per day by phase with the success rate, summed and summarised for screen readers, the numbers as a table', () => {
    const html = renderToStaticMarkup(<WorkflowRunChart stats={stats} />);
    expect(html).toContain('data-testid="chart-home-workflows"');
    expect(html).toContain('data-runs="6"');
    expect(html).toContain('Delivery Pipelines runs and success rate, last 3 days');
    expect(html).toContain(
      'aria-label="Delivery Pipelines runs and success rate, last 3 days. 6 Delivery Pipelines runs in the last 3 days: 4 succeeded, 1 failed, 1 errored, a success rate of 67%; 50% on Nov 27."',
    );
    expect(html).toContain('6 runs · 67% succeeded');
    // Bars for the two days with runs only.
    expect(html).toContain('data-chart-bars="2"');
    expect(tableRows(html)).toEqual([
      ['Nov 25', '3', '1', '0', '75%'],
      ['Nov 26', '0', '0', '0', '—'],
      ['Nov 27', '1', '0', '1', '50%'],
    ]);
  });

  it('says when nothing ran, and has no rate for a day without runs', () => {
    expect(runsSummary([{ date: '2026-11-27', succeeded: 0, failed: 0, error: 0 }])).toBe('No Delivery Pipelines runs finished in the last 1 days.');
    expect(runSuccessRate({ date: '2026-11-27', succeeded: 0, failed: 0, error: 0 })).toBeUndefined();
    const html = renderToStaticMarkup(<WorkflowRunChart stats={{ ...stats, days: null }} />);
    expect(html).toContain('data-runs="0"');
  });
});
