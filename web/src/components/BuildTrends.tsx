// Build trends over the last days, from GET /api/v1/builds/stats (counted by the server): builds
// per day with the success rate, their duration, and the queue and runner time. Loaded lazily
// (with visx) by Home, the pipeline page and the runners page, so the first load stays small.
import { builds as buildsApi, runners as runnersApi } from '../api/ci';
import type { BuildStats } from '../api/types';
import { formatDuration } from '../lib/builds';
import { dayLabel, durationSummary, formatRate, queueSummary, successRate, successSummary, totals, utilisation } from '../lib/buildStats';
import { useResource } from '../lib/useResource';
import { DailyChart } from './Charts';
import { ErrorState } from './States';

export type TrendChartKind = 'success' | 'duration' | 'queue';

export interface BuildTrendsProps {
  /** One pipeline (ID or project/name); all of the account's when unset. */
  pipeline?: string;
  days?: number;
  charts?: TrendChartKind[];
}

/** A y axis tick of a duration: 250ms, 1.5s, 40s, 2.5m, 1.2h. */
export function axisDuration(ms: number): string {
  const trim = (v: number) => String(Math.round(v * 10) / 10);
  if (ms === 0) return '0';
  if (ms < 1000) return `${Math.round(ms)}ms`;
  if (ms < 60_000) return `${trim(ms / 1000)}s`;
  if (ms < 3_600_000) return `${trim(ms / 60_000)}m`;
  return `${trim(ms / 3_600_000)}h`;
}

export default function BuildTrends({ pipeline, days = 14, charts = ['success', 'duration', 'queue'] }: BuildTrendsProps) {
  const wantRunners = charts.includes('queue');
  const { data, error, reload } = useResource(
    (signal) =>
      Promise.all([
        buildsApi.stats({ days, pipeline }, signal),
        // The runner count only adds to the queue chart's footer: its failure is not the charts'.
        wantRunners ? runnersApi.list(signal).catch(() => undefined) : Promise.resolve(undefined),
      ]),
    [pipeline, days, wantRunners],
  );
  if (error) return <ErrorState error={error} onRetry={reload} />;
  if (!data) return <div className="chart-placeholder skeleton-row" role="status" aria-label="Loading build trends" aria-busy="true" />;
  const [stats, runners] = data;
  return <TrendCharts stats={stats} charts={charts} runners={runners?.items.length} connected={runners?.items.filter((r) => r.connected).length} />;
}

export function TrendCharts({ stats, charts, runners, connected }: { stats: BuildStats; charts: TrendChartKind[]; runners?: number; connected?: number }) {
  const days = stats.days;
  const labels = days.map((d) => dayLabel(d.date));
  const t = totals(days);
  // Runner utilisation: the days' runner time over the registered runners' time.
  const busy = runners !== undefined && days.length > 0 ? utilisation(t.busyMs / days.length, runners) : undefined;
  return (
    <div className="chart-row" data-testid="build-trends" data-total={t.total}>
      {charts.includes('success') && (
        <DailyChart
          testId="chart-success"
          title={`Builds and success rate, last ${days.length} days`}
          summary={successSummary(days)}
          labels={labels}
          bars={[
            { key: 'succeeded', label: 'Succeeded', className: 'chart-success', values: days.map((d) => d.succeeded) },
            { key: 'failed', label: 'Failed', className: 'chart-danger', values: days.map((d) => d.failed) },
            { key: 'other', label: 'Terminated or running', className: 'chart-neutral', values: days.map((d) => d.total - d.succeeded - d.failed) },
          ]}
          line={{ key: 'rate', label: 'Success rate', className: 'chart-accent', values: days.map((d) => successRate(d)), max: 100 }}
          formatLine={(v) => `${Math.round(v)}%`}
          footer={
            <>
              {t.total} builds · {formatRate(t.rate)} succeeded
            </>
          }
        />
      )}
      {charts.includes('duration') && (
        <DailyChart
          testId="chart-duration"
          title={`Build duration, last ${days.length} days`}
          summary={durationSummary(days)}
          labels={labels}
          bars={[{ key: 'avg', label: 'Average duration', className: 'chart-info', values: days.map((d) => (d.ran > 0 ? d.avgDurationMs : undefined)) }]}
          line={{ key: 'max', label: 'Longest', className: 'chart-warning', values: days.map((d) => (d.ran > 0 ? d.maxDurationMs : undefined)) }}
          formatBar={axisDuration}
          formatLine={axisDuration}
          footer={
            <>
              average {formatDuration(t.avgDurationMs)} · longest {formatDuration(t.maxDurationMs)}
            </>
          }
        />
      )}
      {charts.includes('queue') && (
        <DailyChart
          testId="chart-queue"
          title={`Queue and runner time, last ${days.length} days`}
          summary={queueSummary(days, stats)}
          labels={labels}
          bars={[{ key: 'busy', label: 'Runner time used', className: 'chart-info', values: days.map((d) => d.busyMs) }]}
          line={{ key: 'wait', label: 'Average queue wait', className: 'chart-warning', values: days.map((d) => (d.started > 0 ? d.avgQueueWaitMs : undefined)) }}
          formatBar={axisDuration}
          formatLine={axisDuration}
          footer={
            <>
              now {stats.queued} queued · {stats.running} running · {stats.pendingApproval} waiting for approval
              {runners !== undefined && (
                <>
                  {' '}
                  · {connected ?? 0} of {runners} runners connected
                  {busy !== undefined && (
                    <span data-testid="runner-utilisation" title="Runner time used over the days shown, as a share of the registered runners' time (at today's count)">
                      {' '}
                      · runners busy {busy > 0 && busy < 1 ? 'under 1%' : formatRate(busy)} of the time
                    </span>
                  )}
                </>
              )}
            </>
          }
        />
      )}
    </div>
  );
}
