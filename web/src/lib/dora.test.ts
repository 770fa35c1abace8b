import { describe, expect, it } from 'vitest';
import type { DORABucket, DORAReport, Deployment } from '../api/analytics';
import {
  aftermath,
  bandLabel,
  bandTone,
  bucketFailureRate,
  bucketLabel,
  choices,
  deploymentsSummary,
  doraParams,
  doraQuery,
  failureSummary,
  formatMetric,
  formatSeconds,
  leadTimeSummary,
  rangeSince,
  readDoraFilters,
  restoreSummary,
  shortRevision,
} from './dora';

const bucket = (start: string, deployments: number, successful: number, failures: number, extra: Partial<DORABucket> = {}): DORABucket => ({
  start,
  deployments,
  successful,
  failures,
  incidents: 0,
  openIncidents: 0,
  ...extra,
});

function report(over: Partial<DORAReport> = {}): DORAReport {
  return {
    since: '2026-11-01T00:00:00Z',
    until: '2026-11-04T00:00:00Z',
    bucket: 'day',
    failures: ['sync-failed', 'degraded', 'rollback'],
    failureWindowSeconds: 3600,
    deploymentFrequency: { value: 1.333, unit: 'per-day', band: 'elite' },
    leadTimeForChanges: { value: 5400, unit: 'seconds', band: 'elite' },
    changeFailureRate: { value: 20, unit: 'percent', band: 'low' },
    timeToRestore: { value: 1800, unit: 'seconds', band: 'elite' },
    deployments: 5,
    successful: 4,
    failedChanges: 1,
    incidents: 2,
    openIncidents: 1,
    series: [
      bucket('2026-11-01T00:00:00Z', 1, 1, 0, { leadTimeSeconds: 3600 }),
      bucket('2026-11-02T00:00:00Z', 0, 0, 0),
      bucket('2026-11-03T00:00:00Z', 4, 3, 1, { leadTimeSeconds: 7200, incidents: 2, openIncidents: 1, timeToRestoreSeconds: 1800 }),
    ],
    ...over,
  };
}

describe('DORA values in words', () => {
  it('formats each unit, and a metric without data as a dash', () => {
    expect(formatMetric({ value: 1.333, unit: 'per-day', band: 'elite' })).toBe('1.3 per day');
    expect(formatMetric({ value: 0.5, unit: 'per-day', band: 'high' })).toBe('3.5 per week');
    expect(formatMetric({ value: 0.05, unit: 'per-day', band: 'medium' })).toBe('1.5 per month');
    expect(formatMetric({ value: 0, unit: 'per-day', band: 'low' })).toBe('0 per day');
    expect(formatMetric({ value: 5400, unit: 'seconds', band: 'elite' })).toBe('1.5h');
    expect(formatMetric({ value: 12.345, unit: 'percent', band: 'low' })).toBe('12.3%');
    expect(formatMetric({ value: 0, unit: 'seconds', band: 'none' })).toBe('—');
    expect(formatMetric({ value: 0, unit: 'percent', band: 'none' })).toBe('—');
    expect(formatSeconds(45)).toBe('45s');
    expect(formatSeconds(720)).toBe('12m');
    expect(formatSeconds(3 * 86400)).toBe('3d');
  });

  it('gives every band a tone and a word', () => {
    expect(['elite', 'high', 'medium', 'low', 'none'].map(bandTone)).toEqual(['success', 'info', 'warning', 'danger', 'neutral']);
    expect(bandLabel('elite')).toBe('Elite');
    expect(bandLabel('none')).toBe('No data');
    expect(bandLabel('')).toBe('No data');
  });

  it('labels buckets in UTC: days, the Monday of a week, months', () => {
    expect(bucketLabel('2026-11-26T00:00:00Z', 'day')).toBe('Nov 26');
    expect(bucketLabel('2026-11-23T00:00:00Z', 'week')).toBe('Nov 23');
    expect(bucketLabel('2026-11-01T00:00:00Z', 'month')).toBe('Nov 2026');
    expect(bucketLabel('not a time', 'day')).toBe('not a time');
  });

  it('computes a bucket failure rate only where there were deployments', () => {
    expect(bucketFailureRate(bucket('x', 4, 3, 1))).toBe(25);
    expect(bucketFailureRate(bucket('x', 0, 0, 0))).toBeUndefined();
  });
});

describe('chart summaries', () => {
  it('says what each chart shows in one sentence', () => {
    const r = report();
    expect(deploymentsSummary(r)).toBe('5 deployments over 3 days: 4 successful, 1 not; 1.3 per day. The most: 4 on Nov 3.');
    expect(failureSummary(r)).toBe('1 of 5 deployments were failed changes (20%). The most: 1 on Nov 3.');
    expect(leadTimeSummary(r)).toBe('Median lead time 1.5h; the mean per day ranges from 1h to 2h, 2h on Nov 3.');
    expect(restoreSummary(r)).toBe('2 incidents, 1 not restored yet; median time to restore 30m. The most: 2 on Nov 3.');
  });

  it('says when there is nothing to show', () => {
    const empty = report({ deployments: 0, successful: 0, failedChanges: 0, incidents: 0, openIncidents: 0, series: [bucket('2026-11-01T00:00:00Z', 0, 0, 0)] });
    expect(deploymentsSummary(empty)).toBe('No deployments over 1 day.');
    expect(failureSummary(empty)).toBe('No deployments, so no change failure rate.');
    expect(leadTimeSummary(empty)).toBe('No successful deployment with a known commit time.');
    expect(restoreSummary(empty)).toBe('No incidents (Degraded until Healthy again) in this range.');
    expect(deploymentsSummary(report({ bucket: 'week', series: null, deployments: 0 }))).toBe('No deployments over 0 weeks.');
  });
});

describe('the dashboard filters in the URL', () => {
  it('reads them with defaults, refusing unknown ranges and buckets', () => {
    expect(readDoraFilters(new URLSearchParams(''))).toEqual({ app: '', runtime: '', cluster: '', product: '', range: '30d', bucket: 'day' });
    expect(readDoraFilters(new URLSearchParams('app=web&runtime=edge&cluster=prod&product=shop&range=90d&bucket=week'))).toEqual({
      app: 'web',
      runtime: 'edge',
      cluster: 'prod',
      product: 'shop',
      range: '90d',
      bucket: 'week',
    });
    expect(readDoraFilters(new URLSearchParams('range=2y&bucket=year'))).toMatchObject({ range: '30d', bucket: 'day' });
  });

  it('writes them back leaving defaults and empty ones out, and round-trips', () => {
    const f = readDoraFilters(new URLSearchParams('app=web&range=7d&bucket=month'));
    expect(doraParams(f)).toEqual({ app: 'web', runtime: undefined, cluster: undefined, product: undefined, range: '7d', bucket: 'month' });
    expect(doraParams(readDoraFilters(new URLSearchParams('')))).toEqual({ app: undefined, runtime: undefined, cluster: undefined, product: undefined, range: undefined, bucket: undefined });
  });

  it('offers each application or cluster once, sorted', () => {
    const ds = [{ application: 'web', cluster: 'prod' }, { application: 'api' }, { application: 'web', cluster: 'staging' }] as Deployment[];
    expect(choices(ds, (d) => d.application)).toEqual(['api', 'web']);
    expect(choices(ds, (d) => d.cluster)).toEqual(['prod', 'staging']);
  });
});

describe('the DORA request of the filters', () => {
  it("asks once, with the product for the server to resolve, and leaves empty filters out", () => {
    const now = Date.parse('2026-11-27T08:00:00Z');
    const f = readDoraFilters(new URLSearchParams('product=shop&runtime=edge&range=7d&bucket=week'));
    expect(doraQuery(f, now)).toEqual({ product: 'shop', runtime: 'edge', app: undefined, cluster: undefined, since: rangeSince('7d', now), bucket: 'week' });
    expect(doraQuery(readDoraFilters(new URLSearchParams('')), now).product).toBeUndefined();
  });
});

describe('ranges', () => {
  it('start at midnight UTC so that n days are n daily buckets, today the last', () => {
    const now = Date.parse('2026-11-27T08:15:00Z');
    expect(rangeSince('30d', now)).toBe('2026-10-29T00:00:00Z');
    expect(rangeSince('7d', now)).toBe('2026-11-21T00:00:00Z');
    expect(rangeSince('1d', now)).toBe('2026-11-27T00:00:00Z');
    expect(rangeSince('nonsense', now)).toBe('2026-10-29T00:00:00Z');
  });
});

describe('deployments in words', () => {
  it('shortens SHAs but keeps tags and branches', () => {
    expect(shortRevision('a'.repeat(40))).toBe('aaaaaaa');
    expect(shortRevision('v1.2.3')).toBe('v1.2.3');
    expect(shortRevision('')).toBe('—');
  });

  it('says what made a deployment a failed change', () => {
    const d = { degradedAt: '2026-11-01T10:00:00Z', rolledBackAt: '2026-11-01T10:30:00Z' } as Deployment;
    expect(aftermath(d)).toMatch(/^degraded .+ · rolled back .+$/);
    expect(aftermath({} as Deployment)).toBe('');
  });
});
