// The DORA report's trend charts (per day, week or month) and Home's delivery charts:
// deployments per day with their success rate, and each runtime's deployments. Drawn by
// Charts.tsx with visx; this module loads lazily with it, after the page has rendered.
import { dora, type DORAReport } from '../api/analytics';
import type { Runtime } from '../api/types';
import { Link, href } from '../app/router';
import { bucketFailureRate, bucketLabel, rangeSince, deploymentsSummary, failureSummary, formatSeconds, leadTimeSummary, restoreSummary, successRate } from '../lib/dora';
import { useResource } from '../lib/useResource';
import { DailyChart, Sparkline } from './Charts';
import { DataTable } from './ResourceTable';
import { ErrorState } from './States';

/** A y axis tick of seconds: 0, 45s, 12m, 3.5h, 2d. */
export function axisSeconds(s: number): string {
  return s === 0 ? '0' : formatSeconds(s);
}

const headers: Record<string, string> = { day: 'Day', week: 'Week of', month: 'Month' };

/** The four metrics over time: deployments, change failure rate, lead time and time to restore. */
export function DoraTrends({ report }: { report: DORAReport }) {
  const series = report.series ?? [];
  const labels = series.map((b) => bucketLabel(b.start, report.bucket));
  const per = report.bucket === 'week' ? 'week' : report.bucket === 'month' ? 'month' : 'day';
  const header = headers[report.bucket] ?? 'Day';
  return (
    <div className="chart-row" data-testid="dora-trends" data-deployments={report.deployments}>
      <DailyChart
        testId="chart-deployments"
        title={`Deployments per ${per}`}
        summary={deploymentsSummary(report)}
        labels={labels}
        labelHeader={header}
        bars={[
          { key: 'successful', label: 'Successful', className: 'chart-success', values: series.map((b) => b.successful) },
          { key: 'failed', label: 'Failed syncs', className: 'chart-danger', values: series.map((b) => b.deployments - b.successful) },
        ]}
        footer={<>{report.deployments} deployments · {report.successful} successful</>}
      />
      <DailyChart
        testId="chart-failure-rate"
        title={`Change failure rate per ${per}`}
        summary={failureSummary(report)}
        labels={labels}
        labelHeader={header}
        bars={[{ key: 'failures', label: 'Failed changes', className: 'chart-danger', values: series.map((b) => b.failures) }]}
        line={{ key: 'rate', label: 'Change failure rate', className: 'chart-warning', values: series.map(bucketFailureRate), max: 100 }}
        formatLine={(v) => `${Math.round(v)}%`}
        footer={<>{report.failedChanges} failed changes of {report.deployments}</>}
      />
      <DailyChart
        testId="chart-lead-time"
        title={`Lead time for changes per ${per}`}
        summary={leadTimeSummary(report)}
        labels={labels}
        labelHeader={header}
        bars={[{ key: 'lead', label: 'Mean lead time', className: 'chart-info', values: series.map((b) => b.leadTimeSeconds) }]}
        formatBar={axisSeconds}
      />
      <DailyChart
        testId="chart-restore"
        title={`Time to restore per ${per}`}
        summary={restoreSummary(report)}
        labels={labels}
        labelHeader={header}
        bars={[{ key: 'restore', label: 'Median time to restore', className: 'chart-warning', values: series.map((b) => b.timeToRestoreSeconds) }]}
        line={{ key: 'incidents', label: 'Incidents started', className: 'chart-danger', values: series.map((b) => (b.incidents ? b.incidents : undefined)) }}
        formatBar={axisSeconds}
        footer={
          <>
            {report.incidents} incidents · {report.openIncidents} not restored yet
          </>
        }
      />
    </div>
  );
}

/** The most runtimes Home asks about, one request each. */
const HOME_RUNTIMES = 8;

/** Home: deployments over the last days with the success rate, and each runtime's deployments. */
export default function DeliveryTrends({ days = 14, runtimes = [] }: { days?: number; runtimes?: Runtime[] }) {
  const shown = runtimes.slice(0, HOME_RUNTIMES);
  const names = shown.map((r) => r.name).join(',');
  const { data, error, reload } = useResource(
    (signal) =>
      Promise.all([
        dora({ since: rangeSince(`${days}d`), bucket: 'day' }, signal),
        Promise.all(shown.map((rt) => dora({ since: rangeSince(`${days}d`), bucket: 'day', runtime: rt.id }, signal).then((r) => ({ rt, r })).catch(() => ({ rt, r: undefined })))),
      ]),
    [days, names],
  );
  if (error) return <ErrorState error={error} onRetry={reload} />;
  if (!data) return <div className="chart-placeholder skeleton-row" role="status" aria-label="Loading deployment trends" aria-busy="true" />;
  const [all, perRuntime] = data;
  return <DeliveryCharts report={all} perRuntime={perRuntime} more={runtimes.length - shown.length} />;
}

export function DeliveryCharts({ report, perRuntime, more = 0 }: { report: DORAReport; perRuntime: { rt: Runtime; r?: DORAReport }[]; more?: number }) {
  const series = report.series ?? [];
  const rate = report.deployments ? Math.round((100 * report.successful) / report.deployments) : undefined;
  return (
    <div className="chart-row" data-testid="delivery-trends" data-deployments={report.deployments}>
      <DailyChart
        testId="chart-home-deployments"
        title={`Deployments and success rate, last ${series.length} days`}
        summary={deploymentsSummary(report)}
        labels={series.map((b) => bucketLabel(b.start, 'day'))}
        bars={[
          { key: 'successful', label: 'Successful', className: 'chart-success', values: series.map((b) => b.successful) },
          { key: 'failed', label: 'Failed syncs', className: 'chart-danger', values: series.map((b) => b.deployments - b.successful) },
        ]}
        line={{ key: 'rate', label: 'Success rate', className: 'chart-accent', values: series.map(successRate), max: 100 }}
        formatLine={(v) => `${Math.round(v)}%`}
        footer={
          <>
            {report.deployments} deployments · {rate === undefined ? 'none' : `${rate}%`} succeeded · <Link to="/dora">DORA metrics</Link>
          </>
        }
      />
      {perRuntime.length > 0 && (
        <figure className="chart" data-testid="chart-home-runtimes">
          <figcaption className="chart-title">Deployments by runtime, last {series.length} days</figcaption>
          <DataTable
            className="table table-compact"
            rows={perRuntime}
            rowKey={(x) => x.rt.id}
            rowProps={(x) => ({ 'data-testid': `home-runtime-deployments-${x.rt.name}` })}
            columns={[
              { header: 'Runtime', cell: (x) => <Link to={href('/dora', { runtime: x.rt.name })}>{x.rt.name}</Link> },
              { header: 'Deployments', className: 'col-num', cell: (x) => (x.r ? x.r.deployments : '—') },
              { header: 'Succeeded', className: 'col-num', cell: (x) => (x.r && x.r.deployments ? `${Math.round((100 * x.r.successful) / x.r.deployments)}%` : '—') },
              {
                header: 'Success rate per day',
                cell: (x) => {
                  if (!x.r) return <span className="muted">could not load</span>;
                  const label = `${x.rt.name}: ${x.r.deployments} deployments in ${series.length} days, ${x.r.successful} successful`;
                  return <Sparkline values={(x.r.series ?? []).map(successRate)} label={label} className="chart-success" />;
                },
              },
            ]}
          />
          {more > 0 && <div className="muted small">and {more} more runtimes: see the DORA page for each.</div>}
        </figure>
      )}
    </div>
  );
}
