// Deployments as a timeline (docs/analytics.md): each change that reached an environment, newest
// first, with its revision, trigger and result, the images it deployed (digest) and — from image
// enrichment — the commits and issues those images were built from. Filtered by application,
// runtime and cluster through the URL; the application page links here.
import { deployments as deploymentsApi } from '../api/analytics';
import { Link, href, useSearchParams } from '../app/router';
import { DeploymentTimeline } from '../components/DeploymentTimeline';
import { SearchFilters } from '../components/SearchFilters';
import { PageHeader } from '../components/PageHeader';
import { ListPager } from '../components/Pager';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { usePagedList } from '../lib/usePagedList';


export default function Deployments() {
  const q = useSearchParams();
  const app = q.get('app') ?? '';
  const runtime = q.get('runtime') ?? '';
  const cluster = q.get('cluster') ?? '';
  // A year back: the API's default is 30 days.
  const list = usePagedList((o, signal) => deploymentsApi.list({ app, runtime, cluster, since: '366d' }, { limit: o.limit ?? 50, after: o.after }, signal), [app, runtime, cluster]);
  const items = list.data?.items ?? [];
  return (
    <div data-page="deployments" data-ready={list.data ? 'true' : undefined}>
      <PageHeader title={app ? `Deployments of ${app}` : 'Deployments'}>
        Each sync that reached an environment, with the images it deployed and the commits and issues they were built from. <Link to={href('/dora', { app, runtime, cluster })}>DORA metrics →</Link>
      </PageHeader>
      <SearchFilters key={`${app}|${runtime}|${cluster}`} path="/deployments" label="Filter deployments" fields={[{ key: 'app', label: 'Application' }, { key: 'runtime', label: 'Runtime' }, { key: 'cluster', label: 'Cluster' }]} values={{ app, runtime, cluster }} />
      {list.error !== undefined ? (
        <ErrorState error={list.error} onRetry={() => list.reload()} />
      ) : !list.data ? (
        <LoadingRows label="Loading deployments" rows={5} />
      ) : items.length === 0 ? (
        <EmptyState title="No deployments">Deployments are recorded when a runtime reports a finished sync of an application (the last 366 days are shown).</EmptyState>
      ) : (
        <div aria-busy={list.loading}>
          <DeploymentTimeline items={items} showApp={!app} />
          <ListPager list={list} noun="deployments" one="deployment" />
        </div>
      )}
    </div>
  );
}
