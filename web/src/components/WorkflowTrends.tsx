// Home's Delivery Pipelines runs: the Argo Workflows the runtimes reported finished, per day with
// the success rate, from GET /api/v1/archived-workflows/stats (counted by the server from the
// workflow archive). Loaded lazily (with visx) by Home, beside the build and deployment trends.
import type { WorkflowRunDay, WorkflowRunStats } from '../api/workflows';
import { workflowRunStats } from '../api/workflows';
import { dayLabel, formatRate } from '../lib/buildStats';
import { useResource } from '../lib/useResource';
import { DailyChart } from './Charts';
import { ErrorState } from './States';

/** A day's success rate in percent: succeeded ÷ finished; undefined when none finished. */
export function runSuccessRate(d: WorkflowRunDay): number | undefined {
  const n = d.succeeded + d.failed + d.error;
  return n === 0 ? undefined : (100 * d.succeeded) / n;
}

/** The window's runs added up. */
export function runTotals(days: WorkflowRunDay[]) {
  const t = { runs: 0, succeeded: 0, failed: 0, error: 0, rate: undefined as number | undefined };
  for (const d of days) {
    t.succeeded += d.succeeded;
    t.failed += d.failed;
    t.error += d.error;
  }
  t.runs = t.succeeded + t.failed + t.error;
  t.rate = t.runs === 0 ? undefined : (100 * t.succeeded) / t.runs;
  return t;
}

/** A screen reader's sentence for the chart. */
export function runsSummary(days: WorkflowRunDay[]): string {
  const t = runTotals(days);
  if (t.runs === 0) return `No Delivery Pipelines runs finished in the last ${days.length} days.`;
  const last = [...days].reverse().find((d) => runSuccessRate(d) !== undefined);
  return (
    `${t.runs} Delivery Pipelines run${t.runs === 1 ? '' : 's'} in the last ${days.length} days: ${t.succeeded} succeeded, ${t.failed} failed, ${t.error} errored, ` +
    `a success rate of ${formatRate(t.rate)}` +
    (last ? `; ${formatRate(runSuccessRate(last))} on ${dayLabel(last.date)}.` : '.')
  );
}

export function WorkflowRunChart({ stats }: { stats: WorkflowRunStats }) {
  const days = stats.days ?? [];
  const t = runTotals(days);
  return (
    <div className="chart-row" data-testid="workflow-trends" data-runs={t.runs}>
      <DailyChart
        testId="chart-home-workflows"
        title={`Delivery Pipelines runs and success rate, last ${days.length} days`}
        summary={runsSummary(days)}
        labels={days.map((d) => dayLabel(d.date))}
        bars={[
          { key: 'succeeded', label: 'Succeeded', className: 'chart-success', values: days.map((d) => d.succeeded) },
          { key: 'failed', label: 'Failed', className: 'chart-danger', values: days.map((d) => d.failed) },
          { key: 'error', label: 'Error', className: 'chart-warning', values: days.map((d) => d.error) },
        ]}
        line={{ key: 'rate', label: 'Success rate', className: 'chart-accent', values: days.map(runSuccessRate), max: 100 }}
        formatLine={(v) => `${Math.round(v)}%`}
        footer={
          <>
            {t.runs} runs · {formatRate(t.rate)} succeeded · from the workflow archive
          </>
        }
      />
    </div>
  );
}

export default function WorkflowTrends({ days = 14 }: { days?: number }) {
  const { data, error, reload } = useResource((signal) => workflowRunStats(days, signal), [days]);
  if (error) return <ErrorState error={error} onRetry={reload} />;
  if (!data) return <div className="chart-placeholder skeleton-row" role="status" aria-label="Loading Delivery Pipelines runs" aria-busy="true" />;
  return <WorkflowRunChart stats={data} />;
}
