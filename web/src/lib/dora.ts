// The DORA report (GET /api/v1/dora, docs/analytics.md) as the dashboard shows it: metric values
// in words, band tones, bucket labels, per-bucket series and the charts' one-sentence summaries,
// and the dashboard's filters to and from the URL.
import type { DORABucket, DORAMetric, DORAQuery, DORAReport, Deployment } from '../api/analytics';
import { formatTime } from './format';
import type { Tone } from './tone';

export type MetricKey = 'deploymentFrequency' | 'leadTimeForChanges' | 'changeFailureRate' | 'timeToRestore';

export const metrics: { key: MetricKey; label: string; what: string }[] = [
  { key: 'deploymentFrequency', label: 'Deployment frequency', what: 'successful deployments per day' },
  { key: 'leadTimeForChanges', label: 'Lead time for changes', what: 'median time from commit to deployed' },
  { key: 'changeFailureRate', label: 'Change failure rate', what: 'deployments that failed or were followed by a failure' },
  { key: 'timeToRestore', label: 'Time to restore', what: 'median time from Degraded to Healthy' },
];

/** The tone of a band: elite green, high blue, medium amber, low red, none grey. */
export function bandTone(band: string): Tone {
  switch (band) {
    case 'elite':
      return 'success';
    case 'high':
      return 'info';
    case 'medium':
      return 'warning';
    case 'low':
      return 'danger';
  }
  return 'neutral';
}

/** "Elite", "High", …; "No data" for none. */
export function bandLabel(band: string): string {
  if (!band || band === 'none') return 'No data';
  return band[0].toUpperCase() + band.slice(1);
}

/** A length of time in seconds as "45s", "12m", "3.5h", "2.1d". */
export function formatSeconds(s: number): string {
  const trim = (v: number) => String(Math.round(v * 10) / 10);
  if (s < 60) return `${Math.round(s)}s`;
  if (s < 3600) return `${trim(s / 60)}m`;
  if (s < 86400) return `${trim(s / 3600)}h`;
  return `${trim(s / 86400)}d`;
}

/** A metric's value in its unit: "1.4 per day" (or "2 per week" below one a day), "3.5h", "12.5%"; "—" without data. */
export function formatMetric(m: DORAMetric): string {
  if (m.band === 'none' && m.value === 0 && m.unit !== 'per-day') return '—';
  switch (m.unit) {
    case 'per-day':
      if (m.value === 0) return '0 per day';
      if (m.value >= 1) return `${Math.round(m.value * 10) / 10} per day`;
      if (m.value * 7 >= 1) return `${Math.round(m.value * 70) / 10} per week`;
      return `${Math.round(m.value * 300) / 10} per month`;
    case 'seconds':
      return formatSeconds(m.value);
    case 'percent':
      return `${Math.round(m.value * 10) / 10}%`;
  }
  return String(m.value);
}

export type BucketKind = 'day' | 'week' | 'month';

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** A bucket's label in UTC: "Nov 26" (a day, or the Monday a week starts), "Nov 2026" (a month). */
export function bucketLabel(start: string, bucket: string): string {
  const d = new Date(start);
  if (Number.isNaN(d.getTime())) return start;
  if (bucket === 'month') return `${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
  return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
}

/** Failed changes ÷ deployments × 100 of one bucket; undefined without deployments. */
export function bucketFailureRate(b: DORABucket): number | undefined {
  return b.deployments === 0 ? undefined : (100 * b.failures) / b.deployments;
}

function bucketNoun(bucket: string, n: number): string {
  const w = bucket === 'week' ? 'week' : bucket === 'month' ? 'month' : 'day';
  return `${n} ${w}${n === 1 ? '' : 's'}`;
}

/** The busiest bucket's label and count ("" when none has any). */
function busiest(series: DORABucket[], bucket: string, pick: (b: DORABucket) => number): string {
  let best = -1;
  for (let i = 0; i < series.length; i++) if (pick(series[i]) > 0 && (best < 0 || pick(series[i]) > pick(series[best]))) best = i;
  return best < 0 ? '' : ` The most: ${pick(series[best])} on ${bucket === 'week' ? 'the week of ' : ''}${bucketLabel(series[best].start, bucket)}.`;
}

/** The deployments chart's summary: "12 deployments over 30 days: 11 successful, 1 not. The most: 4 on Nov 26." */
export function deploymentsSummary(r: DORAReport): string {
  const s = r.series ?? [];
  if (r.deployments === 0) return `No deployments over ${bucketNoun(r.bucket, s.length)}.`;
  return `${r.deployments} deployment${r.deployments === 1 ? '' : 's'} over ${bucketNoun(r.bucket, s.length)}: ${r.successful} successful, ${r.deployments - r.successful} not; ${formatMetric(r.deploymentFrequency)}.${busiest(s, r.bucket, (b) => b.deployments)}`;
}

/** The change failure chart's summary. */
export function failureSummary(r: DORAReport): string {
  if (r.deployments === 0) return 'No deployments, so no change failure rate.';
  return `${r.failedChanges} of ${r.deployments} deployments were failed changes (${formatMetric(r.changeFailureRate)}).${busiest(r.series ?? [], r.bucket, (b) => b.failures)}`;
}

/** The lead time chart's summary. */
export function leadTimeSummary(r: DORAReport): string {
  const known = (r.series ?? []).filter((b) => b.leadTimeSeconds !== undefined);
  if (known.length === 0) return 'No successful deployment with a known commit time.';
  const last = known[known.length - 1];
  return `Median lead time ${formatMetric(r.leadTimeForChanges)}; the mean per ${r.bucket} ranges from ${formatSeconds(Math.min(...known.map((b) => b.leadTimeSeconds ?? 0)))} to ${formatSeconds(Math.max(...known.map((b) => b.leadTimeSeconds ?? 0)))}, ${formatSeconds(last.leadTimeSeconds ?? 0)} on ${bucketLabel(last.start, r.bucket)}.`;
}

/** The time to restore chart's summary. */
export function restoreSummary(r: DORAReport): string {
  if (r.incidents === 0) return 'No incidents (Degraded until Healthy again) in this range.';
  const open = r.openIncidents ? `, ${r.openIncidents} not restored yet` : '';
  return `${r.incidents} incident${r.incidents === 1 ? '' : 's'}${open}; median time to restore ${formatMetric(r.timeToRestore)}.${busiest(r.series ?? [], r.bucket, (b) => b.incidents)}`;
}

/** The dashboard's filters, as kept in the URL. */
export interface DoraFilters {
  app: string;
  runtime: string;
  cluster: string;
  product: string;
  /** 7d, 30d, 90d, 180d, 365d */
  range: string;
  bucket: BucketKind;
}

export const ranges = [
  { value: '7d', label: 'Last 7 days' },
  { value: '30d', label: 'Last 30 days' },
  { value: '90d', label: 'Last 90 days' },
  { value: '180d', label: 'Last 180 days' },
  { value: '365d', label: 'Last 365 days' },
];

/** The filters in a URL's query; unknown ranges and buckets fall back to 30 days and days. */
export function readDoraFilters(q: URLSearchParams): DoraFilters {
  const range = q.get('range') ?? '';
  const bucket = q.get('bucket') ?? '';
  return {
    app: q.get('app') ?? '',
    runtime: q.get('runtime') ?? '',
    cluster: q.get('cluster') ?? '',
    product: q.get('product') ?? '',
    range: ranges.some((r) => r.value === range) ? range : '30d',
    bucket: bucket === 'week' || bucket === 'month' ? bucket : 'day',
  };
}

/** The filters as URL parameters: defaults and empty ones left out. */
export function doraParams(f: DoraFilters): Record<string, string | undefined> {
  return {
    app: f.app || undefined,
    runtime: f.runtime || undefined,
    cluster: f.cluster || undefined,
    product: f.product || undefined,
    range: f.range === '30d' ? undefined : f.range,
    bucket: f.bucket === 'day' ? undefined : f.bucket,
  };
}

/** Distinct sorted values of a field of deployments: the filter's choices. */
export function choices(ds: Deployment[], pick: (d: Deployment) => string | undefined): string[] {
  return [...new Set(ds.map(pick).filter((v): v is string => !!v))].sort();
}

/** Per bucket of a DORA series, the share of successful deployments (0–100); undefined without any. */
export function successRate(b: Pick<DORABucket, 'deployments' | 'successful'>): number | undefined {
  return b.deployments === 0 ? undefined : (100 * b.successful) / b.deployments;
}

/**
 * The DORA request of the filters: one call, the product's applications as a whole when a
 * product is chosen (the server resolves them and computes the medians over them in SQL).
 */
export function doraQuery(f: DoraFilters, now: number = Date.now()): DORAQuery {
  return {
    app: f.app || undefined,
    runtime: f.runtime || undefined,
    cluster: f.cluster || undefined,
    product: f.product || undefined,
    since: rangeSince(f.range, now),
    bucket: f.bucket,
  };
}

/** A revision shortened like git does (a SHA to 7 characters; a tag or branch as it is). */
export function shortRevision(rev: string): string {
  return /^[0-9a-f]{40,64}$/.test(rev) ? rev.slice(0, 7) : rev || '—';
}

/** What happened after a deployment that made it a failed change, in words ("" when nothing did). */
export function aftermath(d: Deployment): string {
  const parts: string[] = [];
  if (d.degradedAt) parts.push(`degraded ${formatTime(d.degradedAt)}`);
  if (d.rolledBackAt) parts.push(`rolled back ${formatTime(d.rolledBackAt)}`);
  return parts.join(' · ');
}

/**
 * The start of a range of n days ending today ("30d"): midnight UTC n − 1 days ago, so a daily
 * series has exactly n buckets, today's the last (RFC 3339, as the API takes it).
 */
export function rangeSince(range: string, now: number = Date.now()): string {
  const n = Math.max(1, parseInt(range, 10) || 30);
  const d = new Date(now);
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() - (n - 1))).toISOString().replace('.000Z', 'Z');
}
