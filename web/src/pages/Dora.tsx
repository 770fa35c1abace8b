// The DORA dashboard (docs/analytics.md, docs/webui.md): the four metrics with their bands over
// a range, their trend per day, week or month, and filters by application, runtime, cluster and
// product, all kept in the URL. A product's report is its applications' reports added up (the
// medians cannot be: they are shown per application).
import { Suspense, lazy, type ChangeEvent } from 'react';
import { deployments as deploymentsApi, dora, type DORAReport } from '../api/analytics';
import { products as productsApi } from '../api/products';
import { runtimes as runtimesApi } from '../api/rest';
import { Link, href, navigate, useSearchParams } from '../app/router';
import { Badge } from '../components/Badge';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { DataTable } from '../components/ResourceTable';
import { ErrorState, LoadingRows } from '../components/States';
import { bandLabel, bandTone, choices, combineReports, doraParams, formatMetric, metrics, ranges, rangeSince, readDoraFilters, type DoraFilters } from '../lib/dora';
import { plural } from '../lib/format';
import { useResource } from '../lib/useResource';

const DoraTrends = lazy(() => import('../components/DoraCharts').then((m) => ({ default: m.DoraTrends })));

/** The four metrics as cards: value, band, what it measures. */
export function MetricCards({ report, note }: { report: DORAReport; note?: string }) {
  return (
    <section className="cards cards-4" aria-label="DORA metrics" data-testid="dora-metrics">
      {metrics.map((m) => {
        const v = report[m.key];
        const missing = v.band === 'none' && note;
        return (
          <div key={m.key} className="card" data-testid={`metric-${m.key}`} data-band={v.band}>
            <div className="card-title">{m.label}</div>
            <div className="card-value">{missing ? '—' : formatMetric(v)}</div>
            <div>
              <Badge tone={bandTone(v.band)}>{bandLabel(v.band)}</Badge>
            </div>
            <div className="muted small card-foot">{missing ? note : m.what}</div>
          </div>
        );
      })}
    </section>
  );
}

function Filters({ f, apps, runtimes, clusters, products }: { f: DoraFilters; apps: string[]; runtimes: string[]; clusters: string[]; products: string[] }) {
  const set = (k: keyof DoraFilters) => (e: ChangeEvent<HTMLSelectElement>) => {
    const next = { ...f, [k]: e.target.value };
    if (k === 'product') next.app = ''; // the product's applications differ
    navigate(href('/dora', doraParams(next)), { replace: true });
  };
  const opts = (values: string[], current: string) => (current && !values.includes(current) ? [...values, current] : values);
  const select = (k: 'app' | 'runtime' | 'cluster' | 'product', label: string, any: string, values: string[]) => (
    <Field label={label}>
      <select name={k} value={f[k]} onChange={set(k)}>
        <option value="">{any}</option>
        {opts(values, f[k]).map((v) => (
          <option key={v} value={v}>
            {v}
          </option>
        ))}
      </select>
    </Field>
  );
  return (
    <form className="filters" role="search" aria-label="Filter DORA metrics" onSubmit={(e) => e.preventDefault()}>
      {select('product', 'Product', 'Any product', products)}
      {select('app', 'Application', f.product ? 'Every application of the product' : 'Any application', apps)}
      {select('runtime', 'Runtime', 'Any runtime', runtimes)}
      {select('cluster', 'Cluster', 'Any cluster', clusters)}
      <Field label="Time range">
        <select name="range" value={f.range} onChange={set('range')}>
          {ranges.map((r) => (
            <option key={r.value} value={r.value}>
              {r.label}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Per">
        <select name="bucket" value={f.bucket} onChange={set('bucket')}>
          <option value="day">Day</option>
          <option value="week">Week</option>
          <option value="month">Month</option>
        </select>
      </Field>
    </form>
  );
}

interface Loaded {
  report: DORAReport;
  /** With a product and no application: each application's report. */
  perApp?: { runtime: string; app: string; report: DORAReport }[];
}

export default function Dora() {
  const params = useSearchParams();
  const f = readDoraFilters(params);
  // The filters' choices: runtimes, the deployments' applications and clusters in the range,
  // products and the chosen product's applications.
  const opts = useResource(
    (signal) =>
      Promise.all([
        runtimesApi.list(signal).then((r) => r.items.map((x) => x.name).sort()).catch(() => [] as string[]),
        deploymentsApi.list({ since: rangeSince(f.range) }, { limit: 500 }, signal).then((p) => p.items).catch(() => []),
        productsApi.list(signal).then((p) => p.items.map((x) => x.name)).catch(() => [] as string[]),
      ]),
    [f.range],
  );
  const productApps = useResource(
    async (signal) => {
      if (!f.product) return undefined;
      const v = await productsApi.get(f.product, signal);
      const all = [...v.environments.flatMap((e) => e.applications), ...v.unplaced];
      return all.filter((a) => (!f.runtime || a.runtime === f.runtime) && (!f.cluster || a.cluster === f.cluster));
    },
    [f.product, f.runtime, f.cluster],
  );
  const key = JSON.stringify(f);
  const report = useResource(
    async (signal): Promise<Loaded> => {
      const q = { runtime: f.runtime, cluster: f.cluster, since: rangeSince(f.range), bucket: f.bucket };
      if (!f.product || f.app) return { report: await dora({ ...q, app: f.app }, signal) };
      if (productApps.data === undefined) return new Promise<Loaded>(() => undefined); // waits for the product's applications
      const perApp = await Promise.all(productApps.data.map(async (a) => ({ runtime: a.runtime, app: a.name, report: await dora({ ...q, runtime: a.runtime, app: a.name }, signal) })));
      const template = perApp[0]?.report ?? (await dora(q, signal));
      const combined = combineReports(template, perApp.map((p) => p.report));
      return { report: combined, perApp };
    },
    [key, productApps.data],
  );
  const [runtimes = [], deps = [], products = []] = opts.data ?? [];
  const apps = f.product ? [...new Set((productApps.data ?? []).map((a) => a.name))].sort() : choices(deps, (d) => d.application);
  const clusters = choices(deps, (d) => d.cluster);
  const data = report.data;
  const note = data?.perApp ? 'a median per application: see the table below' : undefined;
  return (
    <div data-page="dora" data-ready={data ? 'true' : undefined}>
      <PageHeader title="DORA metrics">How often changes reach production, how long they take, how often they fail and how fast service comes back (definitions in docs/analytics.md).</PageHeader>
      <Filters f={f} apps={apps} runtimes={runtimes} clusters={clusters} products={products} />
      {report.error !== undefined ? (
        <ErrorState error={report.error} onRetry={() => report.reload()} />
      ) : !data ? (
        <LoadingRows label="Loading DORA metrics" rows={4} />
      ) : (
        <div aria-busy={report.loading}>
          <MetricCards report={data.report} note={note} />
          <p className="muted small" data-testid="dora-counts">
            {plural(data.report.deployments, 'deployment')} ({data.report.successful} successful, {plural(data.report.failedChanges, 'failed change')}) · {plural(data.report.incidents, 'incident')}, {data.report.openIncidents} open ·
            failures counted: {(data.report.failures ?? []).join(', ') || 'none'} within {Math.round(data.report.failureWindowSeconds / 60)} minutes
          </p>
          <h2 className="section-title">Trends</h2>
          <Suspense fallback={<div className="chart-placeholder skeleton-row" role="status" aria-label="Loading DORA trends" />}>
            <DoraTrends report={data.report} />
          </Suspense>
          {data.perApp && (
            <>
              <h2 className="section-title">Per application of {f.product}</h2>
              <DataTable
                testId="dora-per-app"
                rows={data.perApp}
                rowKey={(r) => `${r.runtime}/${r.app}`}
                rowProps={(r) => ({ 'data-testid': `dora-app-${r.runtime}-${r.app}` })}
                columns={[
                  { header: 'Application', cell: (r) => <Link to={href('/dora', doraParams({ ...f, app: r.app, runtime: r.runtime }))}>{r.app}</Link> },
                  { header: 'Runtime', cell: (r) => r.runtime },
                  ...metrics.map((m) => ({
                    header: m.label,
                    cell: (r: { report: DORAReport }) => (
                      <>
                        {formatMetric(r.report[m.key])} <Badge tone={bandTone(r.report[m.key].band)}>{bandLabel(r.report[m.key].band)}</Badge>
                      </>
                    ),
                  })),
                ]}
              />
            </>
          )}
        </div>
      )}
    </div>
  );
}
