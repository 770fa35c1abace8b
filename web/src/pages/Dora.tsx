// The DORA dashboard (docs/analytics.md, docs/webui.md): the four metrics with their bands over
// a range, their trend per day, week or month, and filters by application, runtime, cluster and
// product, all kept in the URL. A product's report is the server's (GET /api/v1/dora?product=):
// its applications as a whole, medians included.
import { Suspense, lazy, type ChangeEvent } from 'react';
import { deployments as deploymentsApi, dora, type DORAReport } from '../api/analytics';
import { products as productsApi } from '../api/products';
import { runtimes as runtimesApi } from '../api/rest';
import { href, navigate, useSearchParams } from '../app/router';
import { Badge } from '../components/Badge';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { ErrorState, LoadingRows } from '../components/States';
import { bandLabel, bandTone, choices, doraParams, doraQuery, formatMetric, metrics, ranges, rangeSince, readDoraFilters, type DoraFilters } from '../lib/dora';
import { plural } from '../lib/format';
import { useResource } from '../lib/useResource';

const DoraTrends = lazy(() => import('../components/DoraCharts').then((m) => ({ default: m.DoraTrends })));

/** The four metrics as cards: value, band, what it measures. */
export function MetricCards({ report }: { report: DORAReport }) {
  return (
    <section className="cards cards-4" aria-label="DORA metrics" data-testid="dora-metrics">
      {metrics.map((m) => {
        const v = report[m.key];
        return (
          <div key={m.key} className="card" data-testid={`metric-${m.key}`} data-band={v.band}>
            <div className="card-title">{m.label}</div>
            <div className="card-value">{formatMetric(v)}</div>
            <div>
              <Badge tone={bandTone(v.band)}>{bandLabel(v.band)}</Badge>
            </div>
            <div className="muted small card-foot">{m.what}</div>
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

export default function Dora() {
  const params = useSearchParams();
  const f = readDoraFilters(params);
  // The filters' choices: runtimes, products, and the applications and clusters of the
  // deployments in the range (the chosen product's only).
  const opts = useResource(
    (signal) =>
      Promise.all([
        runtimesApi.list(signal).then((r) => r.items.map((x) => x.name).sort()).catch(() => [] as string[]),
        deploymentsApi.list({ since: rangeSince(f.range), product: f.product || undefined }, { limit: 500 }, signal).then((p) => p.items).catch(() => []),
        productsApi.list(signal).then((p) => p.items.map((x) => x.name)).catch(() => [] as string[]),
      ]),
    [f.range, f.product],
  );
  const key = JSON.stringify(f);
  // One request, a product's applications as a whole.
  const report = useResource((signal) => dora(doraQuery(f), signal), [key]);
  const [runtimes = [], deps = [], products = []] = opts.data ?? [];
  const apps = choices(deps, (d) => d.application);
  const clusters = choices(deps, (d) => d.cluster);
  const data = report.data;
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
          <MetricCards report={data} />
          <p className="muted small" data-testid="dora-counts">
            {plural(data.deployments, 'deployment')} ({data.successful} successful, {plural(data.failedChanges, 'failed change')}) · {plural(data.incidents, 'incident')}, {data.openIncidents} open ·
            failures counted: {(data.failures ?? []).join(', ') || 'none'} within {Math.round(data.failureWindowSeconds / 60)} minutes
          </p>
          <h2 className="section-title">Trends</h2>
          <Suspense fallback={<div className="chart-placeholder skeleton-row" role="status" aria-label="Loading DORA trends" />}>
            <DoraTrends report={data} />
          </Suspense>
        </div>
      )}
    </div>
  );
}
