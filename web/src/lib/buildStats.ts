// Build statistics (GET /api/v1/builds/stats) as the charts and their text alternatives show
// them: success rates, totals over a window, and the one-sentence summaries screen readers get.
import type { BuildStatsDay } from '../api/types';
import { formatDuration } from './builds';

/** Succeeded of the builds that succeeded or failed (terminated ones are not judged), 0–100; undefined when none did. */
export function successRate(d: Pick<BuildStatsDay, 'succeeded' | 'failed'>): number | undefined {
  const judged = d.succeeded + d.failed;
  return judged === 0 ? undefined : (100 * d.succeeded) / judged;
}

/** The days added up: counts summed, averages weighted by the builds they are averages of. */
export function totals(days: BuildStatsDay[]) {
  let total = 0,
    succeeded = 0,
    failed = 0,
    finished = 0,
    busyMs = 0,
    maxDurationMs = 0,
    ran = 0,
    started = 0,
    waitMs = 0;
  for (const d of days) {
    total += d.total;
    succeeded += d.succeeded;
    failed += d.failed;
    finished += d.finished;
    busyMs += d.busyMs;
    maxDurationMs = Math.max(maxDurationMs, d.maxDurationMs);
    ran += d.ran;
    started += d.started;
    waitMs += d.avgQueueWaitMs * d.started;
  }
  return {
    total,
    succeeded,
    failed,
    finished,
    busyMs,
    maxDurationMs,
    avgDurationMs: ran > 0 ? busyMs / ran : 0,
    avgQueueWaitMs: started > 0 ? waitMs / started : 0,
    rate: successRate({ succeeded, failed }),
  };
}

/** "87%" (whole percent; "—" when there is nothing to judge). */
export function formatRate(rate: number | undefined): string {
  return rate === undefined ? '—' : `${Math.round(rate)}%`;
}

/** "Nov 26" for a YYYY-MM-DD day, in UTC as the server counts. */
export function dayLabel(date: string): string {
  const d = new Date(date + 'T00:00:00Z');
  return Number.isNaN(d.getTime()) ? date : d.toLocaleDateString('en-US', { month: 'short', day: 'numeric', timeZone: 'UTC' });
}

/** A screen reader's sentence for the success-rate and volume chart. */
export function successSummary(days: BuildStatsDay[]): string {
  const t = totals(days);
  if (t.total === 0) return `No builds in the last ${days.length} days.`;
  const last = [...days].reverse().find((d) => successRate(d) !== undefined);
  return (
    `${t.total} builds in the last ${days.length} days: ${t.succeeded} succeeded, ${t.failed} failed` +
    (t.rate !== undefined ? `, a success rate of ${formatRate(t.rate)}` : '') +
    (last ? `; ${formatRate(successRate(last))} on ${dayLabel(last.date)}.` : '.')
  );
}

/** A screen reader's sentence for the duration chart. */
export function durationSummary(days: BuildStatsDay[]): string {
  const timed = days.filter((d) => d.avgDurationMs > 0);
  if (timed.length === 0) return `No finished builds with a duration in the last ${days.length} days.`;
  const t = totals(days);
  const slowest = timed.reduce((a, b) => (b.avgDurationMs > a.avgDurationMs ? b : a));
  return `Average build duration ${formatDuration(t.avgDurationMs)} over the last ${days.length} days; the longest build took ${formatDuration(t.maxDurationMs)}; the slowest day was ${dayLabel(slowest.date)} at ${formatDuration(slowest.avgDurationMs)} on average.`;
}

/** A screen reader's sentence for the queue and runner chart. */
export function queueSummary(days: BuildStatsDay[], now: { queued: number; running: number; pendingApproval: number }): string {
  const t = totals(days);
  return (
    `Now ${now.queued} queued, ${now.running} running and ${now.pendingApproval} waiting for approval. ` +
    `Over the last ${days.length} days builds waited ${formatDuration(t.avgQueueWaitMs)} on average for a runner, and runners were busy for ${formatDuration(t.busyMs)} in all.`
  );
}

/** Utilisation of runner capacity on a day: busy time over (runners × 24 h), 0–100, when the runner count is known. */
export function utilisation(busyMs: number, runners: number): number | undefined {
  if (runners <= 0) return undefined;
  return Math.min(100, (100 * busyMs) / (runners * 86_400_000));
}
