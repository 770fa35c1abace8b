import { describe, expect, test } from 'vitest';
import type { BuildStatsDay } from '../api/types';
import { axisDuration } from '../components/BuildTrends';
import { listOf } from '../components/States';
import { appsNeedingAttention } from '../pages/Home';
import { conditionTone, problemLabel, problemText, problems } from './apps';
import { dayLabel, durationSummary, formatRate, queueSummary, successRate, successSummary, totals, utilisation } from './buildStats';

const day = (date: string, d: Partial<BuildStatsDay> = {}): BuildStatsDay => ({
  date,
  total: 0,
  finished: 0,
  succeeded: 0,
  failed: 0,
  ran: 0,
  avgDurationMs: 0,
  maxDurationMs: 0,
  started: 0,
  avgQueueWaitMs: 0,
  busyMs: 0,
  ...d,
});

describe('build statistics', () => {
  test('the success rate judges only builds that succeeded or failed', () => {
    expect(successRate({ succeeded: 3, failed: 1 })).toBe(75);
    expect(successRate({ succeeded: 0, failed: 0 })).toBeUndefined();
    expect(formatRate(undefined)).toBe('—');
    expect(formatRate(66.6)).toBe('67%');
  });

  test('totals weight each day\'s averages by the builds they are averages of', () => {
    const t = totals([
      day('2026-11-25', { total: 3, finished: 3, succeeded: 2, failed: 1, ran: 3, avgDurationMs: 1000, maxDurationMs: 2000, busyMs: 3000, started: 3, avgQueueWaitMs: 100 }),
      day('2026-11-26', { total: 2, finished: 1, succeeded: 1, ran: 1, avgDurationMs: 5000, maxDurationMs: 5000, busyMs: 5000, started: 2, avgQueueWaitMs: 400 }),
    ]);
    expect(t).toMatchObject({ total: 5, succeeded: 3, failed: 1, finished: 4, busyMs: 8000, maxDurationMs: 5000 });
    expect(t.avgDurationMs).toBe(2000); // 8 s over 4 builds, not the mean of 1 s and 5 s
    expect(t.avgQueueWaitMs).toBe(220); // (3×100 + 2×400) / 5
    expect(t.rate).toBe(75);
  });

  test('summaries say in words what the charts draw', () => {
    const days = [day('2026-11-25'), day('2026-11-26', { total: 4, finished: 4, succeeded: 3, failed: 1, ran: 4, avgDurationMs: 61_000, maxDurationMs: 90_000, busyMs: 244_000, started: 4, avgQueueWaitMs: 2000 })];
    expect(successSummary(days)).toBe('4 builds in the last 2 days: 3 succeeded, 1 failed, a success rate of 75%; 75% on Nov 26.');
    expect(successSummary([day('2026-11-26')])).toBe('No builds in the last 1 days.');
    expect(durationSummary(days)).toBe('Average build duration 1 m 01 s over the last 2 days; the longest build took 1 m 30 s; the slowest day was Nov 26 at 1 m 01 s on average.');
    expect(durationSummary([day('2026-11-26')])).toContain('No finished builds');
    expect(queueSummary(days, { queued: 2, running: 1, pendingApproval: 0 })).toBe(
      'Now 2 queued, 1 running and 0 waiting for approval. Over the last 2 days builds waited 2.0 s on average for a runner, and runners were busy for 4 m 04 s in all.',
    );
  });

  test('days are labelled in UTC, as the server counts them', () => {
    expect(dayLabel('2026-01-01')).toBe('Jan 1');
    expect(dayLabel('not a day')).toBe('not a day');
  });

  test('utilisation is busy time over the runners\' day, capped at 100', () => {
    expect(utilisation(43_200_000, 1)).toBe(50);
    expect(utilisation(10 * 86_400_000, 2)).toBe(100);
    expect(utilisation(1000, 0)).toBeUndefined();
  });

  test('duration ticks stay short', () => {
    expect([0, 250, 1500, 40_000, 150_000, 4_320_000].map(axisDuration)).toEqual(['0', '250ms', '1.5s', '40s', '2.5m', '1.2h']);
  });
});

describe('honest status', () => {
  test('a missing cluster or a comparison error is a problem; warnings are not', () => {
    expect(conditionTone('NoClusterConfigured')).toBe('danger');
    expect(conditionTone('ComparisonError')).toBe('danger');
    expect(conditionTone('UnsupportedWarning')).toBe('warning');
    const conds = [
      { type: 'SpecWarning', message: 'ignored field' },
      { type: 'ComparisonError', message: 'web/x.yaml: line 3: bad' },
      { type: 'NoClusterConfigured', message: 'no cluster configured' },
    ];
    expect(problems(conds).map((c) => c.type)).toEqual(['ComparisonError', 'NoClusterConfigured']);
    expect(problemText(conds)).toBe('ComparisonError: web/x.yaml: line 3: bad');
    expect(problemText([{ type: 'SpecWarning', message: 'x' }])).toBeUndefined();
    expect(problemLabel('NoClusterConfigured')).toBe('No cluster');
    expect(problemLabel('SomethingNew')).toBe('SomethingNew');
  });

  test('Home counts Unknown health or sync as needing attention', () => {
    expect(appsNeedingAttention({ health: { Healthy: 3 }, sync: { Synced: 3 } })).toBe(0);
    expect(appsNeedingAttention({ health: { Healthy: 2, Unknown: 1 }, sync: { Synced: 2, Unknown: 1 } })).toBe(2);
    expect(appsNeedingAttention({ health: { Degraded: 1, Missing: 1 }, sync: { OutOfSync: 1 } })).toBe(3);
  });

  test('a detail page\'s 404 leads back to its list', () => {
    expect(listOf('/pipelines/web/ci')).toEqual({ to: '/pipelines', label: 'Pipelines' });
    expect(listOf('/builds/bld_1')).toEqual({ to: '/builds', label: 'Builds' });
    expect(listOf('/applications/local/shop')).toEqual({ to: '/applications', label: 'Applications' });
    expect(listOf('/hub/no-such-template')).toEqual({ to: '/hub', label: 'Hub' });
    expect(listOf('/helm/cache/redis')).toEqual({ to: '/helm', label: 'Helm releases' });
    expect(listOf('/pipelines')).toBeUndefined();
    expect(listOf('/no/such')).toBeUndefined();
  });
});
