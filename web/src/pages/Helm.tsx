// Helm releases (docs/runtimes.md#helm-releases): what the runtimes read from Helm's release
// storage in their clusters, per cluster and namespace, and one release's revision history.
import { helmReleases, type HelmRelease, type HelmRevision } from '../api/analytics';
import { Link, href, useSearchParams } from '../app/router';
import { Badge } from '../components/Badge';
import { SearchFilters } from '../components/SearchFilters';
import { PageHeader } from '../components/PageHeader';
import { DataTable } from '../components/ResourceTable';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { formatTime, relativeTime } from '../lib/format';
import { groupReleases, helmStatusTone } from '../lib/helm';
import { useResource } from '../lib/useResource';

function releasePath(r: Pick<HelmRelease, 'namespace' | 'name' | 'runtime' | 'cluster'>): string {
  return href(`/helm/${encodeURIComponent(r.namespace)}/${encodeURIComponent(r.name)}`, { runtime: r.runtime, cluster: r.cluster });
}


/** Releases grouped by cluster, then namespace, a table each. */
export function ReleaseGroups({ releases }: { releases: HelmRelease[] }) {
  return (
    <div data-testid="helm-groups">
      {groupReleases(releases).map((c) => (
        <section key={c.key} aria-label={`Cluster ${c.cluster} of ${c.runtime}`} data-testid={`helm-cluster-${c.cluster}`}>
          <h2 className="section-title">
            {c.cluster} <span className="muted small">runtime {c.runtime}</span>
          </h2>
          {c.namespaces.map((n) => (
            <div key={n.namespace} data-testid={`helm-ns-${c.cluster}-${n.namespace}`}>
              <h3 className="small">namespace {n.namespace}</h3>
              <DataTable
                className="table table-compact"
                rows={n.releases}
                rowKey={(r) => r.id}
                rowProps={(r) => ({ 'data-testid': `helm-release-${r.namespace}-${r.name}` })}
                columns={[
                  { header: 'Release', cell: (r) => <Link to={releasePath(r)}>{r.name}</Link> },
                  { header: 'Chart', cell: (r) => r.chart || '—' },
                  { header: 'Version', cell: (r) => r.chartVersion || '—' },
                  { header: 'App version', cell: (r) => r.appVersion || '—' },
                  { header: 'Revision', className: 'col-num', cell: (r) => r.revision },
                  { header: 'Status', cell: (r) => <Badge tone={helmStatusTone(r.status)}>{r.status || 'unknown'}</Badge> },
                  { header: 'Updated', cell: (r) => (r.updated ? relativeTime(r.updated) : '—'), cellProps: (r) => ({ title: formatTime(r.updated ?? undefined) }) },
                ]}
              />
            </div>
          ))}
        </section>
      ))}
    </div>
  );
}

export default function Helm() {
  const q = useSearchParams();
  const runtime = q.get('runtime') ?? '';
  const cluster = q.get('cluster') ?? '';
  const namespace = q.get('namespace') ?? '';
  const list = useResource((signal) => helmReleases.list({ runtime, cluster, namespace }, signal), [runtime, cluster, namespace]);
  const items = list.data?.items ?? [];
  return (
    <div data-page="helm" data-ready={list.data ? 'true' : undefined}>
      <PageHeader title="Helm releases">The releases your runtimes read from Helm's release storage in their clusters (read-only), by cluster and namespace.</PageHeader>
      <SearchFilters key={`${runtime}|${cluster}|${namespace}`} path="/helm" label="Filter Helm releases" fields={[{ key: 'runtime', label: 'Runtime' }, { key: 'cluster', label: 'Cluster' }, { key: 'namespace', label: 'Namespace' }]} values={{ runtime, cluster, namespace }} />
      {list.error !== undefined ? (
        <ErrorState error={list.error} onRetry={() => list.reload()} />
      ) : !list.data ? (
        <LoadingRows label="Loading Helm releases" rows={5} />
      ) : items.length === 0 ? (
        <EmptyState title="No Helm releases">A runtime reports the Helm releases of its clusters as it reads them; none has reported any{runtime || cluster || namespace ? ' that match' : ''}.</EmptyState>
      ) : (
        <div aria-busy={list.loading}>
          <p className="muted small">
            {items.length} release{items.length === 1 ? '' : 's'}
          </p>
          <ReleaseGroups releases={items} />
        </div>
      )}
    </div>
  );
}

/** A release's revision history, newest first. */
export function HistoryTable({ history }: { history: HelmRevision[] }) {
  return (
    <DataTable
      className="table table-compact"
      testId="helm-history"
      rows={history}
      rowKey={(h) => String(h.revision)}
      rowProps={(h) => ({ 'data-testid': `helm-revision-${h.revision}` })}
      columns={[
        { header: 'Revision', className: 'col-num', cell: (h) => h.revision },
        { header: 'Status', cell: (h) => <Badge tone={helmStatusTone(h.status)}>{h.status || 'unknown'}</Badge> },
        { header: 'Chart', cell: (h) => `${h.chart || '—'}${h.chartVersion ? ` ${h.chartVersion}` : ''}` },
        { header: 'App version', cell: (h) => h.appVersion || '—' },
        { header: 'Updated', cell: (h) => formatTime(h.updated ?? undefined) },
        { header: 'Description', cell: (h) => h.description || '—' },
      ]}
    />
  );
}

export function HelmReleasePage({ params }: { params: Record<string, string> }) {
  const q = useSearchParams();
  const runtime = q.get('runtime') ?? '';
  const cluster = q.get('cluster') ?? '';
  const { namespace = '', name = '' } = params;
  const rel = useResource((signal) => helmReleases.get(namespace, name, { runtime, cluster }, signal), [namespace, name, runtime, cluster]);
  const r = rel.data;
  return (
    <div data-page="helm-release" data-ready={r ? 'true' : undefined}>
      <nav aria-label="Breadcrumb" className="small">
        <Link to="/helm">Helm releases</Link> / {namespace}
      </nav>
      <PageHeader title={name}>{r ? `${r.chart} ${r.chartVersion} in ${r.cluster}/${r.namespace} (runtime ${r.runtime})` : `Helm release in namespace ${namespace}`}</PageHeader>
      {rel.error !== undefined ? (
        <ErrorState error={rel.error} onRetry={() => rel.reload()} />
      ) : !r ? (
        <LoadingRows label="Loading the release" rows={4} />
      ) : (
        <>
          <dl className="facts" data-testid="helm-release-summary">
            <div>
              <dt>Status</dt>
              <dd>
                <Badge tone={helmStatusTone(r.status)}>{r.status || 'unknown'}</Badge>
              </dd>
            </div>
            <div>
              <dt>Revision</dt>
              <dd>{r.revision}</dd>
            </div>
            <div>
              <dt>Chart</dt>
              <dd>
                {r.chart} {r.chartVersion}
              </dd>
            </div>
            <div>
              <dt>App version</dt>
              <dd>{r.appVersion || '—'}</dd>
            </div>
            <div>
              <dt>Updated</dt>
              <dd>{formatTime(r.updated ?? undefined)}</dd>
            </div>
            <div>
              <dt>Description</dt>
              <dd>{r.description || '—'}</dd>
            </div>
            <div>
              <dt>Reported</dt>
              <dd>{relativeTime(r.reportedAt)}</dd>
            </div>
          </dl>
          <h2 className="section-title">Revision history</h2>
          {r.history && r.history.length > 0 ? <HistoryTable history={r.history} /> : <EmptyState title="No history">The runtime reported no revisions of this release.</EmptyState>}
        </>
      )}
    </div>
  );
}
