import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { DORAReport } from '../api/analytics';
import type { Runtime } from '../api/types';
import { DeliveryCharts, DoraTrends, axisSeconds } from './DoraCharts';

const r: DORAReport = {
  since: '2026-11-01T00:00:00Z',
  until: '2026-11-03T00:00:00Z',
  bucket: 'day',
  failures: ['sync-failed'],
  failureWindowSeconds: 3600,
  deploymentFrequency: { value: 1.5, unit: 'per-day', band: 'elite' },
  leadTimeForChanges: { value: 3600, unit: 'seconds', band: 'elite' },
  changeFailureRate: { value: 25, unit: 'percent', band: 'low' },
  timeToRestore: { value: 600, unit: 'seconds', band: 'elite' },
  deployments: 4,
  successful: 3,
  failedChanges: 1,
  incidents: 1,
  openIncidents: 0,
  series: [
    { start: '2026-11-01T00:00:00Z', deployments: 1, successful: 1, failures: 0, incidents: 0, openIncidents: 0, leadTimeSeconds: 3600 },
    { start: '2026-11-02T00:00:00Z', deployments: 3, successful: 2, failures: 1, incidents: 1, openIncidents: 0, leadTimeSeconds: 1800, timeToRestoreSeconds: 600 },
  ],
};

/** The rows of the table under a chart (its "Show as table"), by test id, as cell texts. */
function tableRows(html: string, testId: string): string[][] {
  const at = html.indexOf(`data-testid="${testId}"`);
  if (at < 0) throw new Error(`no ${testId}`);
  const fig = html.slice(at, html.indexOf('</figure>', at));
  const body = fig.slice(fig.indexOf('<tbody>'), fig.indexOf('</tbody>'));
  const text = (h: string) => h.replace(/<[^>]*>/g, '').replace(/&amp;/g, '&');
  return [...body.matchAll(/<tr>(.*?)<\/tr>/g)].map((m) => [...m[1].matchAll(/<t[hd][^>]*>(.*?)<\/t[hd]>/g)].map((c) => text(c[1])));
}

describe('DORA trend charts', () => {
  it('draws the four metrics per bucket as images with a summary, bars where there is data, and their numbers as tables', () => {
    const html = renderToStaticMarkup(<DoraTrends report={r} />);
    for (const id of ['chart-deployments', 'chart-failure-rate', 'chart-lead-time', 'chart-restore']) expect(html).toContain(`data-testid="${id}"`);
    expect(html).toContain('aria-label="Deployments per day. 4 deployments over 2 days: 3 successful, 1 not; 1.5 per day. The most: 3 on Nov 2."');
    expect(html).toContain('Time to restore per day. 1 incident; median time to restore 10m.');
    expect(tableRows(html, 'chart-deployments')).toEqual([
      ['Nov 1', '1', '0'],
      ['Nov 2', '2', '1'],
    ]);
    expect(tableRows(html, 'chart-failure-rate')).toEqual([
      ['Nov 1', '0', '0%'],
      ['Nov 2', '1', '33%'],
    ]);
    expect(tableRows(html, 'chart-lead-time')).toEqual([
      ['Nov 1', '1h'],
      ['Nov 2', '30m'],
    ]);
    expect(tableRows(html, 'chart-restore')).toEqual([
      ['Nov 1', '—', '—'],
      ['Nov 2', '10m', '1'],
    ]);
    // Bars are drawn: two days with deployments.
    expect(html).toMatch(/data-testid="chart-deployments"[\s\S]*?data-chart-bars="2"/);
  });

  it('names the table column by bucket', () => {
    const html = renderToStaticMarkup(<DoraTrends report={{ ...r, bucket: 'week' }} />);
    expect(html).toContain('<th scope="col">Week of</th>');
    expect(html).toContain('Deployments per week');
  });

  it('ticks seconds on the axis', () => {
    expect(axisSeconds(0)).toBe('0');
    expect(axisSeconds(5400)).toBe('1.5h');
  });
});

describe("Home's delivery charts", () => {
  const rt = (name: string) => ({ id: `rt_${name}`, name }) as Runtime;
  it('draws deployments per day with the success rate, and a row per runtime with its sparkline', () => {
    const html = renderToStaticMarkup(<DeliveryCharts report={r} perRuntime={[{ rt: rt('edge'), r }, { rt: rt('gone') }]} more={2} />);
    expect(html).toContain('data-testid="chart-home-deployments"');
    expect(html).toContain('Deployments and success rate, last 2 days');
    expect(tableRows(html, 'chart-home-deployments')).toEqual([
      ['Nov 1', '1', '0', '100%'],
      ['Nov 2', '2', '1', '67%'],
    ]);
    expect(html).toContain('4 deployments · 75% succeeded');
    expect(html).toContain('data-testid="home-runtime-deployments-edge"');
    expect(html).toContain('aria-label="edge: 4 deployments in 2 days, 3 successful"');
    expect(html).toContain('href="/dora?runtime=edge"');
    expect(html).toMatch(/home-runtime-deployments-gone[\s\S]*could not load/);
    expect(html).toContain('and 2 more runtimes');
  });
});
