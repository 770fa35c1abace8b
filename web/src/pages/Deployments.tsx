// Deployments as a timeline (docs/analytics.md): each change that reached an environment, newest
// first, with its revision, trigger and result, the images it deployed (digest) and — from image
// enrichment — the commits and issues those images were built from. Filtered by application,
// runtime and cluster through the URL; the application page links here.
import type { ChangeEvent, FormEvent } from 'react';
import { useState } from 'react';
import { deployments as deploymentsApi } from '../api/analytics';
import { Link, href, navigate, useSearchParams } from '../app/router';
import { DeploymentTimeline } from '../components/DeploymentTimeline';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { ListPager } from '../components/Pager';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { usePagedList } from '../lib/usePagedList';

function Filters({ app, runtime, cluster }: { app: string; runtime: string; cluster: string }) {
  const [f, setF] = useState({ app, runtime, cluster });
  const set = (k: keyof typeof f) => (e: ChangeEvent<HTMLInputElement>) => setF({ ...f, [k]: e.target.value });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    navigate(href('/deployments', { app: f.app.trim(), runtime: f.runtime.trim(), cluster: f.cluster.trim() }));
  };
  return (
    <form className="filters" role="search" aria-label="Filter deployments" onSubmit={submit}>
      <Field label="Application">
        <input type="search" name="app" value={f.app} onChange={set('app')} autoComplete="off" />
      </Field>
      <Field label="Runtime">
        <input type="search" name="runtime" value={f.runtime} onChange={set('runtime')} autoComplete="off" />
      </Field>
      <Field label="Cluster">
        <input type="search" name="cluster" value={f.cluster} onChange={set('cluster')} autoComplete="off" />
      </Field>
      <div className="filters-buttons">
        <button type="submit" className="button button-primary">
          Filter
        </button>
      </div>
    </form>
  );
}

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
      <Filters key={`${app}|${runtime}|${cluster}`} app={app} runtime={runtime} cluster={cluster} />
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
