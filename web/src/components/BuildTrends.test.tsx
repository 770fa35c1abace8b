import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { BuildStats, BuildStatsDay } from '../api/types';
import { TrendCharts } from './BuildTrends';

const day = (date: string, busyMs: number): BuildStatsDay => ({ date, total: 1, finished: 1, succeeded: 1, failed: 0, ran: 1, avgDurationMs: busyMs, maxDurationMs: busyMs, started: 1, avgQueueWaitMs: 1000, busyMs });
const stats = (days: BuildStatsDay[]): BuildStats => ({ since: '', until: '', days, queued: 0, running: 0, pendingApproval: 0 });

describe('TrendCharts queue chart', () => {
  it('says how busy the runners were: runner time over the runners\' time', () => {
    // Two days, 12 h and 36 h of runner time, 2 runners: 24 h a day of 48 → 50 %.
    const html = renderToStaticMarkup(<TrendCharts stats={stats([day('2026-11-26', 43_200_000), day('2026-11-27', 129_600_000)])} charts={['queue']} runners={2} connected={1} />);
    expect(html).toContain('1 of 2 runners connected');
    expect(html).toMatch(/data-testid="runner-utilisation"[^>]*>.*runners busy 50% of the time/);
    const small = renderToStaticMarkup(<TrendCharts stats={stats([day('2026-11-27', 60_000)])} charts={['queue']} runners={1} connected={1} />);
    expect(small).toContain('runners busy under 1% of the time');
  });

  it('says nothing of utilisation without runners', () => {
    expect(renderToStaticMarkup(<TrendCharts stats={stats([day('2026-11-27', 60_000)])} charts={['queue']} runners={0} connected={0} />)).not.toContain('runner-utilisation');
    expect(renderToStaticMarkup(<TrendCharts stats={stats([day('2026-11-27', 60_000)])} charts={['queue']} />)).not.toContain('runner-utilisation');
  });
});
