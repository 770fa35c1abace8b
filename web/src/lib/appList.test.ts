import { beforeEach, describe, expect, it, vi } from 'vitest';

// Each test gets a fresh module: appList remembers whether the server's GraphQL has
// applications for the rest of the page's life.
async function fresh() {
  vi.resetModules();
  const client = await import('../api/client');
  const list = await import('./appList');
  return { client, list };
}

type Handler = (url: string, body: { query?: string; variables?: Record<string, unknown> } | undefined) => { status: number; body: unknown };

function serve(client: typeof import('../api/client'), h: Handler, calls: string[]) {
  client.setFetch(async (url, init) => {
    const body = init?.body ? JSON.parse(init.body as string) : undefined;
    calls.push(body?.query ? `gql:${/query (\w+)/.exec(body.query)?.[1]}` : `GET ${url}`);
    const r = h(url, body);
    return new Response(JSON.stringify(r.body), { status: r.status, headers: { 'Content-Type': 'application/json' } });
  });
}

const missingField = (field: string) => ({ status: 200, body: { errors: [{ message: `Cannot query field "${field}" on type "Query".` }] } });

const proxyApp = (name: string, sync: string, health: string, labels: Record<string, string> = {}) => ({
  name,
  spec: {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name, labels },
    spec: { source: { repoURL: 'https://git.example.com/x.git', path: name }, destination: { server: 'https://kubernetes.default.svc', namespace: name }, project: 'default' },
  },
  status: { name, project: 'default', sync, health: { status: health }, reconciledAt: '2026-11-25T08:00:00Z' },
});

const runtimes = {
  status: 200,
  body: {
    data: {
      runtimes: [
        { name: 'local', status: 'healthy', clusters: [{ name: 'in-cluster', server: 'https://127.0.0.1:6443' }] },
        { name: 'edge', status: 'degraded', clusters: [] },
        { name: 'new', status: 'installing', clusters: [] },
        { name: 'down', status: 'healthy', clusters: [] },
      ],
    },
  },
};

function fallbackServer(url: string, body?: { query?: string }) {
  if (body?.query?.includes('AppRuntimes')) return runtimes;
  if (body?.query) return missingField(body.query.includes('applicationCounts') ? 'applicationCounts' : 'applications');
  if (url === '/runtimes/local/app-proxy/api/v1/applications') return { status: 200, body: { items: [proxyApp('web', 'Synced', 'Healthy', { team: 'web' }), proxyApp('api', 'OutOfSync', 'Degraded')] } };
  if (url === '/runtimes/edge/app-proxy/api/v1/applications') return { status: 200, body: { items: [proxyApp('web', 'OutOfSync', 'Progressing', { team: 'web' })] } };
  if (url === '/runtimes/down/app-proxy/api/v1/applications') return { status: 503, body: { error: { code: 'unavailable', message: 'runtime down is not connected' } } };
  return { status: 404, body: { error: { code: 'not_found', message: url } } };
}

let calls: string[];
beforeEach(() => {
  calls = [];
});

describe('the applications list', () => {
  it('asks GraphQL with the filter and the page, and pages on with the cursor', async () => {
    const { client, list } = await fresh();
    let vars: Record<string, unknown> | undefined;
    serve(
      client,
      (_u, b) => {
        vars = b?.variables;
        return {
          status: 200,
          body: { data: { applications: { nodes: [{ id: 'a1', runtime: 'local', name: 'web', labels: [], destination: {} }], pageInfo: { endCursor: 'c1', hasNextPage: true } } } },
        };
      },
      calls,
    );
    const page = await list.loadAppPage({ labels: ['team=web'], health: 'Healthy' }, 500, undefined);
    expect(page).toMatchObject({ source: 'graphql', nextCursor: 'c1', unreachable: [] });
    expect(page.items.map((a) => a.name)).toEqual(['web']);
    expect(vars).toEqual({ filter: { labels: ['team=web'], health: 'Healthy' }, first: 500, after: null });
    await list.loadAppPage({ labels: [] }, 500, 'c1');
    expect(vars).toEqual({ filter: {}, first: 500, after: 'c1' });
  });

  it('falls back to every connected runtime’s app-proxy when GraphQL has no applications, and says which runtimes are missing', async () => {
    const { client, list } = await fresh();
    serve(client, fallbackServer, calls);
    const page = await list.loadAppPage({ labels: [] }, 500, undefined);
    expect(page.source).toBe('app-proxy');
    expect(page.nextCursor).toBeUndefined();
    expect(page.items.map((a) => `${a.runtime}/${a.name}:${a.syncStatus}`)).toEqual(['local/api:OutOfSync', 'edge/web:OutOfSync', 'local/web:Synced']);
    expect(page.unreachable).toEqual([
      { runtime: 'down', reason: 'runtime down is not connected' },
      { runtime: 'new', reason: 'installing' },
    ]);
    // The installing runtime is not asked at all.
    expect(calls).not.toContain('GET /runtimes/new/app-proxy/api/v1/applications');

    // Learned: the next page load goes straight to the app-proxies.
    calls.length = 0;
    const only = await list.loadAppPage({ labels: ['team=web'], sync: 'OutOfSync' }, 500, undefined);
    expect(calls[0]).toBe('gql:AppRuntimes');
    expect(calls.filter((c) => c.startsWith('gql:Applications'))).toEqual([]);
    expect(only.items.map((a) => a.id)).toEqual(['edge/web']);
  });

  it('asks only the chosen runtime in the fallback', async () => {
    const { client, list } = await fresh();
    serve(client, fallbackServer, calls);
    const page = await list.loadAppPage({ labels: [], runtime: 'edge' }, 500, undefined);
    expect(page.items.map((a) => a.id)).toEqual(['edge/web']);
    expect(page.unreachable).toEqual([]);
    expect(calls.filter((c) => c.startsWith('GET'))).toEqual(['GET /runtimes/edge/app-proxy/api/v1/applications']);
  });

  it('passes other GraphQL errors on instead of falling back', async () => {
    const { client, list } = await fresh();
    serve(client, () => ({ status: 200, body: { errors: [{ message: 'health "Bad" is not valid', extensions: { code: 'invalid_argument', field: 'filter.health' } }] } }), calls);
    await expect(list.loadAppPage({ labels: [] }, 500, undefined)).rejects.toMatchObject({ code: 'invalid_argument', field: 'filter.health' });
  });
});

describe('Home counts', () => {
  const counts = (total: number, health: [string, number][], sync: [string, number][]) => ({
    status: 200,
    body: { data: { applicationCounts: { total, health: health.map(([status, count]) => ({ status, count })), sync: sync.map(([status, count]) => ({ status, count })) } } },
  });

  it('reads the counts the server made, however many applications there are', async () => {
    const { client, list } = await fresh();
    let query = '';
    serve(
      client,
      (_u, b) => {
        query = b?.query ?? '';
        return counts(
          10_000,
          [
            ['Healthy', 6000],
            ['Degraded', 2500],
            ['Progressing', 1000],
            ['', 400],
            ['Exploded', 100],
          ],
          [
            ['Synced', 7000],
            ['OutOfSync', 2999],
            ['Unknown', 1],
          ],
        );
      },
      calls,
    );
    const c = await list.loadAppCounts();
    expect(calls).toEqual(['gql:HomeAppCounts']);
    // One small answer: no application rows are asked for.
    expect(query).toContain('applicationCounts');
    expect(query).not.toContain('nodes');
    expect(c).toMatchObject({ total: 10_000, more: false, source: 'graphql', unreachable: [] });
    // Known statuses are always there; an empty status counts as Unknown; others are kept.
    expect(c.health).toEqual({ Healthy: 6000, Progressing: 1000, Degraded: 2500, Suspended: 0, Missing: 0, Unknown: 400, Exploded: 100 });
    expect(c.sync).toEqual({ Synced: 7000, OutOfSync: 2999, Unknown: 1 });
  });

  it('counts nothing as zeros', async () => {
    const { client, list } = await fresh();
    serve(client, () => counts(0, [], []), calls);
    const c = await list.loadAppCounts();
    expect(c).toMatchObject({ total: 0, more: false, source: 'graphql' });
    expect(c.health.Healthy).toBe(0);
    expect(c.sync).toEqual({ Synced: 0, OutOfSync: 0, Unknown: 0 });
  });

  it('keeps a status named like an Object property a count', async () => {
    const { client, list } = await fresh();
    serve(client, () => counts(3, [['constructor', 2], ['toString', 1]], [['hasOwnProperty', 3]]), calls);
    const c = await list.loadAppCounts();
    expect(c.health.constructor).toBe(2);
    expect(c.health.toString).toBe(1);
    expect(c.sync.hasOwnProperty).toBe(3);
  });

  it('counts the first 1,000 applications on a server without applicationCounts, and remembers that', async () => {
    const { client, list } = await fresh();
    serve(
      client,
      (_u, b) =>
        b?.query?.includes('applicationCounts')
          ? missingField('applicationCounts')
          : {
              status: 200,
              body: { data: { applications: { nodes: [{ healthStatus: 'Healthy', syncStatus: 'Synced' }, { healthStatus: 'Degraded', syncStatus: 'OutOfSync' }], pageInfo: { hasNextPage: true } } } },
            },
      calls,
    );
    const c = await list.loadAppCounts();
    expect(c).toMatchObject({ total: 2, more: true, source: 'graphql' });
    expect(c.health.Degraded).toBe(1);
    expect(calls).toEqual(['gql:HomeAppCounts', 'gql:HomeApps']);
    calls.length = 0;
    await list.loadAppCounts();
    expect(calls).toEqual(['gql:HomeApps']);
  });

  it('counts from the app-proxies when GraphQL has no applications, and remembers that', async () => {
    const { client, list } = await fresh();
    serve(client, fallbackServer, calls);
    const c = await list.loadAppCounts();
    expect(c).toMatchObject({ total: 3, more: false, source: 'app-proxy' });
    expect(c.sync).toEqual({ Synced: 1, OutOfSync: 2, Unknown: 0 });
    expect(c.unreachable.map((u) => u.runtime)).toEqual(['down', 'new']);
    expect(calls.slice(0, 3)).toEqual(['gql:HomeAppCounts', 'gql:HomeApps', 'gql:AppRuntimes']);
    calls.length = 0;
    await list.loadAppCounts();
    expect(calls[0]).toBe('gql:AppRuntimes');
    expect(calls.filter((c) => c.startsWith('gql:Home'))).toEqual([]);
  });

  it('passes other errors on instead of falling back', async () => {
    const { client, list } = await fresh();
    serve(client, () => ({ status: 200, body: { errors: [{ message: 'the database is busy', extensions: { code: 'unavailable' } }] } }), calls);
    await expect(list.loadAppCounts()).rejects.toMatchObject({ code: 'unavailable' });
    expect(calls).toEqual(['gql:HomeAppCounts']);
  });
});

describe('the summary bar’s counts', () => {
  const statusCounts = (pairs: [string, number][]) => pairs.map(([status, count]) => ({ status, count }));

  it('from the app-proxies: the page gets every match of the other filters, to apply health and sync itself', async () => {
    const { client, list } = await fresh();
    serve(client, fallbackServer, calls);
    const page = await list.loadAppPage({ labels: [], health: 'Degraded' }, 500, undefined);
    expect(page.items.map((a) => a.id)).toEqual(['local/api']);
    expect(page.unfaceted?.map((a) => a.id)).toEqual(['local/api', 'edge/web', 'local/web']);
    // The other filters still apply to what it gets.
    const web = await list.loadAppPage({ labels: ['team=web'], sync: 'Synced' }, 500, undefined);
    expect(web.unfaceted?.map((a) => a.id)).toEqual(['edge/web', 'local/web']);
    expect(web.items.map((a) => a.id)).toEqual(['local/web']);
    // And the server is not asked for counts: the page counts what it holds.
    calls.length = 0;
    expect(await list.loadAppFacets({ labels: [] })).toBeUndefined();
    expect(calls).toEqual([]);
  });

  it('from GraphQL: one count with the filters when no facet is chosen', async () => {
    const { client, list } = await fresh();
    const asked: { query?: string; variables?: Record<string, unknown> }[] = [];
    serve(
      client,
      (_u, b) => {
        asked.push(b ?? {});
        return { status: 200, body: { data: { applicationCounts: { health: statusCounts([['Healthy', 7], ['', 2]]), sync: statusCounts([['OutOfSync', 9]]) } } } };
      },
      calls,
    );
    const c = await list.loadAppFacets({ labels: ['team=web'], runtime: 'local' });
    expect(asked).toHaveLength(1);
    expect(asked[0].variables).toEqual({ f: { labels: ['team=web'], runtime: 'local' } });
    expect(c).toEqual({
      health: { Healthy: 7, Progressing: 0, Degraded: 0, Suspended: 0, Missing: 0, Unknown: 2 },
      sync: { Synced: 0, OutOfSync: 9, Unknown: 0 },
    });
  });

  it('from GraphQL with facets chosen: health counted without the health filter, sync without the sync filter', async () => {
    const { client, list } = await fresh();
    let vars: Record<string, unknown> | undefined;
    serve(
      client,
      (_u, b) => {
        vars = b?.variables;
        return { status: 200, body: { data: { byHealth: { health: statusCounts([['Degraded', 3]]) }, bySync: { sync: statusCounts([['Synced', 1], ['OutOfSync', 3]]) } } } };
      },
      calls,
    );
    const c = await list.loadAppFacets({ labels: [], project: 'shop', health: 'Degraded', sync: 'OutOfSync' });
    expect(vars).toEqual({ h: { project: 'shop', sync: 'OutOfSync' }, s: { project: 'shop', health: 'Degraded' } });
    expect(c?.health.Degraded).toBe(3);
    expect(c?.sync).toEqual({ Synced: 1, OutOfSync: 3, Unknown: 0 });
  });

  it('from a server without applicationCounts: none, and it is not asked again', async () => {
    const { client, list } = await fresh();
    serve(client, () => missingField('applicationCounts'), calls);
    expect(await list.loadAppFacets({ labels: [] })).toBeUndefined();
    expect(calls).toEqual(['gql:AppFacets']);
    calls.length = 0;
    expect(await list.loadAppFacets({ labels: [], health: 'Healthy' })).toBeUndefined();
    expect(calls).toEqual([]);
  });

  it('passes other errors on', async () => {
    const { client, list } = await fresh();
    serve(client, () => ({ status: 200, body: { errors: [{ message: 'the database is busy', extensions: { code: 'unavailable' } }] } }), calls);
    await expect(list.loadAppFacets({ labels: [] })).rejects.toMatchObject({ code: 'unavailable' });
  });
});
