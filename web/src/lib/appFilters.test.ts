import { describe, expect, it } from 'vitest';
import type { AppSummary } from '../api/apps';
import { appFilterFromParams, appFilterQuery, appListHref, appViewFromParams, isAppFiltered, labelError, matchesAppFilter, matchesFacets, splitLabels, toGraphQLFilter, toggleFacet, withoutFacets } from './appFilters';

const params = (q: string) => new URLSearchParams(q);

describe('application filters in the URL', () => {
  it('reads every filter, labels repeated or comma-separated', () => {
    const f = appFilterFromParams(params('runtime=local&cluster=in-cluster&health=Degraded&sync=OutOfSync&project=shop&label=team%3Dweb&label=tier%3Dapi,%20env%20%3D%20prod&search=%20front%20'));
    expect(f).toEqual({
      runtime: 'local',
      cluster: 'in-cluster',
      health: 'Degraded',
      sync: 'OutOfSync',
      project: 'shop',
      labels: ['team=web', 'tier=api', 'env=prod'],
      search: 'front',
    });
  });

  it('drops a health or sync word it does not know, and empty values', () => {
    expect(appFilterFromParams(params('health=healthy&sync=whatever&runtime=&label='))).toEqual({ labels: [] });
  });

  it('writes the query in a fixed order and reads back the same filter', () => {
    const f = { runtime: 'edge 1', health: 'Healthy', sync: 'Synced', labels: ['team=web', 'app.kubernetes.io/part-of=shop'], search: 'a&b' };
    const q = appFilterQuery(f);
    expect(q).toBe('?runtime=edge+1&health=Healthy&sync=Synced&label=team%3Dweb&label=app.kubernetes.io%2Fpart-of%3Dshop&search=a%26b');
    expect(appFilterFromParams(params(q.slice(1)))).toEqual({ ...f, cluster: undefined, project: undefined });
    expect(appFilterQuery({ labels: [] })).toBe('');
  });

  it('says whether anything filters', () => {
    expect(isAppFiltered({ labels: [] })).toBe(false);
    expect(isAppFiltered({ labels: ['a=b'] })).toBe(true);
    expect(isAppFiltered({ labels: [], search: 'x' })).toBe(true);
  });

  it('becomes the GraphQL filter with only what is set', () => {
    expect(toGraphQLFilter({ labels: [] })).toEqual({});
    expect(toGraphQLFilter({ runtime: 'local', labels: ['team=web'], health: 'Missing' })).toEqual({ runtime: 'local', labels: ['team=web'], health: 'Missing' });
  });
});

describe('label filters', () => {
  it('splits on commas and new lines, trimming around =', () => {
    expect(splitLabels(' team = web ,tier=api\n\nflag ')).toEqual(['team=web', 'tier=api', 'flag']);
  });
  it('checks keys and values like Kubernetes', () => {
    expect(labelError('team=web')).toBeUndefined();
    expect(labelError('app.kubernetes.io/name=shop-1')).toBeUndefined();
    expect(labelError('team')).toBeUndefined();
    expect(labelError('team=')).toBeUndefined();
    expect(labelError('=web')).toContain('has no key');
    expect(labelError('bad key=x')).toContain('Label key "bad key" is not valid');
    expect(labelError('team=a b')).toContain('Label value "a b" is not valid');
    expect(labelError('team=' + 'x'.repeat(64))).toContain('is not valid');
  });
});

const app = (over: Partial<AppSummary> = {}): AppSummary => ({
  id: 'local/web',
  runtime: 'local',
  name: 'web',
  project: 'default',
  labels: [{ key: 'team', value: 'web' }],
  repoUrl: 'https://git.example.com/shop/deploy.git',
  path: 'apps/frontend',
  destination: { server: 'https://kubernetes.default.svc', namespace: 'shop' },
  autoSync: true,
  autoSyncDisabled: false,
  syncStatus: 'Synced',
  healthStatus: 'Healthy',
  ...over,
});

describe('filtering in the browser (app-proxy lists)', () => {
  const clusters = [{ name: 'prod', server: 'https://10.0.0.1:6443' }];
  it('matches runtime, health, sync and project exactly', () => {
    expect(matchesAppFilter(app(), { labels: [], runtime: 'local', health: 'Healthy', sync: 'Synced', project: 'default' })).toBe(true);
    expect(matchesAppFilter(app(), { labels: [], runtime: 'edge' })).toBe(false);
    expect(matchesAppFilter(app(), { labels: [], health: 'Degraded' })).toBe(false);
    expect(matchesAppFilter(app(), { labels: [], sync: 'OutOfSync' })).toBe(false);
    expect(matchesAppFilter(app(), { labels: [], project: 'other' })).toBe(false);
  });
  it('matches a cluster by the name the runtime knows it by, or by server URL', () => {
    expect(matchesAppFilter(app(), { labels: [], cluster: 'in-cluster' })).toBe(true);
    const remote = app({ destination: { server: 'https://10.0.0.1:6443/', namespace: 'shop' } });
    expect(matchesAppFilter(remote, { labels: [], cluster: 'prod' }, clusters)).toBe(true);
    expect(matchesAppFilter(remote, { labels: [], cluster: 'https://10.0.0.1:6443' }, clusters)).toBe(true);
    expect(matchesAppFilter(remote, { labels: [], cluster: 'in-cluster' }, clusters)).toBe(false);
    expect(matchesAppFilter(app({ destination: { name: 'staging' } }), { labels: [], cluster: 'staging' })).toBe(true);
  });
  it('needs every label; a bare key needs only the label to be there', () => {
    const a = app({ labels: [{ key: 'team', value: 'web' }, { key: 'tier', value: 'api' }] });
    expect(matchesAppFilter(a, { labels: ['team=web', 'tier=api'] })).toBe(true);
    expect(matchesAppFilter(a, { labels: ['team=web', 'tier=db'] })).toBe(false);
    expect(matchesAppFilter(a, { labels: ['tier'] })).toBe(true);
    expect(matchesAppFilter(a, { labels: ['env'] })).toBe(false);
  });
  it('searches name, project, repository, path and namespace, ignoring case', () => {
    for (const s of ['WEB', 'git.example.com', 'frontend', 'shop']) expect(matchesAppFilter(app(), { labels: [], search: s })).toBe(true);
    expect(matchesAppFilter(app(), { labels: [], search: 'nothing-like-it' })).toBe(false);
  });
});

describe('the view and the facets in the URL', () => {
  it('reads the view, table unless tiles', () => {
    expect(appViewFromParams(params('view=tiles'))).toBe('tiles');
    expect(appViewFromParams(params('view=table'))).toBe('table');
    expect(appViewFromParams(params(''))).toBe('table');
    expect(appViewFromParams(params('view=Tiles'))).toBe('table');
  });

  it('writes the view after the filters, and not at all for the table', () => {
    expect(appListHref({ labels: [] }, 'table')).toBe('/applications');
    expect(appListHref({ labels: [] }, 'tiles')).toBe('/applications?view=tiles');
    expect(appListHref({ health: 'Degraded', labels: ['team=web'] }, 'tiles')).toBe('/applications?health=Degraded&label=team%3Dweb&view=tiles');
    const back = params(appListHref({ sync: 'OutOfSync', labels: [] }, 'tiles').split('?')[1]);
    expect(appFilterFromParams(back).sync).toBe('OutOfSync');
    expect(appViewFromParams(back)).toBe('tiles');
  });

  it('toggles a facet: chooses a status, another replaces it, the same one clears it; the rest stays', () => {
    const f = { runtime: 'local', labels: ['team=web'] };
    const healthy = toggleFacet(f, 'health', 'Healthy');
    expect(healthy).toEqual({ runtime: 'local', labels: ['team=web'], health: 'Healthy' });
    expect(toggleFacet(healthy, 'health', 'Degraded').health).toBe('Degraded');
    expect(toggleFacet(healthy, 'health', 'Healthy').health).toBeUndefined();
    const both = toggleFacet(healthy, 'sync', 'OutOfSync');
    expect(both).toMatchObject({ health: 'Healthy', sync: 'OutOfSync', runtime: 'local' });
    expect(withoutFacets(both)).toEqual({ runtime: 'local', labels: ['team=web'], health: undefined, sync: undefined });
  });

  it('matches the facets, an empty status as Unknown', () => {
    const a = { healthStatus: 'Healthy', syncStatus: 'OutOfSync' };
    expect(matchesFacets(a, {})).toBe(true);
    expect(matchesFacets(a, { health: 'Healthy' })).toBe(true);
    expect(matchesFacets(a, { health: 'Healthy', sync: 'Synced' })).toBe(false);
    expect(matchesFacets(a, { health: 'Degraded' })).toBe(false);
    expect(matchesFacets({ healthStatus: '', syncStatus: '' }, { health: 'Unknown', sync: 'Unknown' })).toBe(true);
  });
});
