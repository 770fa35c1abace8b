import { describe, expect, it } from 'vitest';
import type { ProxyApplication } from '../api/apps';
import { appPath, autoSyncLabel, clusterName, countApps, countsFromServer, destinationLabel, facetCounts, healthBadge, locationLabel, resourceId, resourceLabel, summaryFromProxy, syncBadge } from './apps';

describe('application badges', () => {
  it('colours health and sync, with a symbol each', () => {
    expect(healthBadge('Healthy')).toEqual({ tone: 'success', icon: '♥', label: 'Healthy' });
    expect(healthBadge('Degraded').tone).toBe('danger');
    expect(healthBadge('Progressing').tone).toBe('info');
    expect(healthBadge('Missing').tone).toBe('warning');
    expect(healthBadge(undefined).label).toBe('Unknown');
    expect(healthBadge('Exploded')).toEqual({ tone: 'neutral', icon: '?', label: 'Exploded' });
    expect(healthBadge('constructor').tone).toBe('neutral');
    expect(syncBadge('Synced').tone).toBe('success');
    expect(syncBadge('OutOfSync').tone).toBe('warning');
    expect(syncBadge('RequiresPruning').tone).toBe('danger');
    expect(syncBadge('').label).toBe('Unknown');
  });
});

describe('application names and places', () => {
  it('builds the page URL with the runtime and name escaped', () => {
    expect(appPath('local', 'web')).toBe('/applications/local/web');
    expect(appPath('edge 1', 'a/b', 'diff')).toBe('/applications/edge%201/a%2Fb?tab=diff');
  });
  it('names resources', () => {
    const k = { group: 'apps', kind: 'Deployment', namespace: 'web', name: 'api' };
    expect(resourceLabel(k)).toBe('Deployment/api');
    expect(resourceLabel(k, true)).toBe('apps/Deployment/web/api');
    expect(resourceLabel({ kind: 'Namespace', name: 'web' }, true)).toBe('Namespace/web');
    expect(resourceId(k)).toBe('apps/Deployment/web/api');
    expect(resourceId({ kind: 'ConfigMap', namespace: 'web', name: 's' })).toBe('/ConfigMap/web/s');
  });
  it('shows a manifest location as file:line, whichever case its fields have', () => {
    expect(locationLabel({ File: 'web/deploy.yaml', Line: 12 })).toBe('web/deploy.yaml:12');
    expect(locationLabel({ file: 'chart/values.yaml' })).toBe('chart/values.yaml');
    expect(locationLabel({})).toBe('');
    expect(locationLabel(undefined)).toBe('');
  });
  it('names the destination cluster as its runtime does', () => {
    const clusters = [{ name: 'prod', server: 'https://10.0.0.1:6443' }];
    expect(clusterName({ server: 'https://kubernetes.default.svc' })).toBe('in-cluster');
    expect(clusterName({ server: 'https://10.0.0.1:6443/' }, clusters)).toBe('prod');
    expect(clusterName({ server: 'https://elsewhere:6443' }, clusters)).toBe('https://elsewhere:6443');
    expect(clusterName({ name: 'staging', server: 'x' })).toBe('staging');
    expect(destinationLabel({ server: 'https://kubernetes.default.svc', namespace: 'web' })).toBe('in-cluster / web');
    expect(destinationLabel({})).toBe('—');
  });
});

describe('auto-sync in words', () => {
  it('says on, off, what it does, and when a rollback turned it off', () => {
    expect(autoSyncLabel({ autoSync: false, autoSyncDisabled: false })).toBe('off');
    expect(autoSyncLabel({ autoSync: true, autoSyncDisabled: false })).toBe('on');
    expect(autoSyncLabel({ autoSync: true, autoSyncDisabled: false, prune: true, selfHeal: true })).toBe('on (prune, self-heal)');
    expect(autoSyncLabel({ autoSync: true, autoSyncDisabled: true, prune: true })).toBe('off: disabled by a rollback');
  });
});

describe('a list row from the app-proxy', () => {
  // Trimmed from a real answer of GET /runtimes/local/app-proxy/api/v1/applications.
  const a: ProxyApplication = {
    name: 'web',
    file: 'apps/web.yaml',
    spec: {
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'Application',
      metadata: { name: 'web', labels: { tier: 'front', team: 'web' } },
      spec: {
        source: { repoURL: 'file:///tmp/src.git', path: 'web', targetRevision: 'main' },
        destination: { server: 'https://kubernetes.default.svc', namespace: 'web-e2e' },
        project: 'default',
        syncPolicy: { automated: { prune: true } },
      },
    },
    status: {
      name: 'web',
      project: 'default',
      sync: 'OutOfSync',
      revision: '244ea55f97eba5efcb36fd6846daf3031edf1536',
      targetRevision: 'main',
      commit: { sha: '244ea55f97eba5efcb36fd6846daf3031edf1536', author: 'e2e', authorTime: '2026-11-25T08:40:21Z', commitTime: '2026-11-25T08:40:22Z', message: 'first\n' },
      health: { status: 'Missing', message: 'ConfigMap/web-e2e/settings: the resource does not exist' },
      autoSyncDisabled: true,
      reconciledAt: '2026-11-25T08:40:27.88247582Z',
    },
  };
  it('carries what the list shows', () => {
    expect(summaryFromProxy('local', a)).toEqual({
      id: 'local/web',
      runtime: 'local',
      name: 'web',
      project: 'default',
      labels: [
        { key: 'team', value: 'web' },
        { key: 'tier', value: 'front' },
      ],
      repoUrl: 'file:///tmp/src.git',
      path: 'web',
      targetRevision: 'main',
      destination: { server: 'https://kubernetes.default.svc', namespace: 'web-e2e' },
      autoSync: true,
      autoSyncDisabled: true,
      syncStatus: 'OutOfSync',
      healthStatus: 'Missing',
      healthMessage: 'ConfigMap/web-e2e/settings: the resource does not exist',
      revision: '244ea55f97eba5efcb36fd6846daf3031edf1536',
      commit: { sha: '244ea55f97eba5efcb36fd6846daf3031edf1536', author: 'e2e', message: 'first\n', time: '2026-11-25T08:40:22Z' },
      reconciledAt: '2026-11-25T08:40:27.88247582Z',
    });
  });
  it('reads a new application (not reconciled yet, no spec) without failing', () => {
    const s = summaryFromProxy('local', { name: 'new', status: { name: 'new', project: '', sync: '', health: { status: '' }, reconciledAt: '0001-01-01T00:00:00Z' } });
    expect(s).toMatchObject({ project: 'default', syncStatus: 'Unknown', healthStatus: 'Unknown', autoSync: false, labels: [], destination: {} });
    expect(s.reconciledAt).toBeUndefined();
  });
});

describe('counts for Home', () => {
  it('counts by health and sync, known statuses always present', () => {
    const c = countApps([
      { healthStatus: 'Healthy', syncStatus: 'Synced' },
      { healthStatus: 'Degraded', syncStatus: 'OutOfSync' },
      { healthStatus: 'Healthy', syncStatus: 'OutOfSync' },
      { healthStatus: '', syncStatus: '' },
    ]);
    expect(c.total).toBe(4);
    expect(c.health).toEqual({ Healthy: 2, Progressing: 0, Degraded: 1, Suspended: 0, Missing: 0, Unknown: 1 });
    expect(c.sync).toEqual({ Synced: 1, OutOfSync: 2, Unknown: 1 });
    expect(countApps([]).health.Healthy).toBe(0);
  });

  it('takes the server’s counts, an empty status as Unknown, known statuses always present', () => {
    const c = countsFromServer({
      total: 1500,
      health: [
        { status: 'Healthy', count: 1200 },
        { status: '', count: 200 },
        { status: 'Unknown', count: 100 },
      ],
      sync: [{ status: 'OutOfSync', count: 1500 }],
    });
    expect(c.total).toBe(1500);
    expect(c.health).toEqual({ Healthy: 1200, Progressing: 0, Degraded: 0, Suspended: 0, Missing: 0, Unknown: 300 });
    expect(c.sync).toEqual({ Synced: 0, OutOfSync: 1500, Unknown: 0 });
  });
});

describe('facet counts for the summary bar', () => {
  const apps = [
    { healthStatus: 'Healthy', syncStatus: 'Synced' },
    { healthStatus: 'Healthy', syncStatus: 'OutOfSync' },
    { healthStatus: 'Degraded', syncStatus: 'OutOfSync' },
    { healthStatus: 'Progressing', syncStatus: 'Synced' },
    { healthStatus: '', syncStatus: '' },
  ];

  it('counts every status of each facet, zeros included, when nothing is chosen', () => {
    expect(facetCounts(apps, {})).toEqual({
      health: { Healthy: 2, Progressing: 1, Degraded: 1, Suspended: 0, Missing: 0, Unknown: 1 },
      sync: { Synced: 2, OutOfSync: 2, Unknown: 1 },
    });
  });

  it('counts health among the chosen sync status and sync among the chosen health, not a facet by itself', () => {
    const c = facetCounts(apps, { sync: 'OutOfSync' });
    // Health counts what choosing each health would show next to OutOfSync …
    expect(c.health).toMatchObject({ Healthy: 1, Degraded: 1, Progressing: 0, Unknown: 0 });
    // … while sync counts stay those of every sync status: the choice among them is still open.
    expect(c.sync).toEqual({ Synced: 2, OutOfSync: 2, Unknown: 1 });
    const both = facetCounts(apps, { sync: 'OutOfSync', health: 'Healthy' });
    expect(both.health.Healthy).toBe(1);
    expect(both.sync).toEqual({ Synced: 1, OutOfSync: 1, Unknown: 0 });
  });

  it('counts an empty status as Unknown when it is the one chosen', () => {
    expect(facetCounts(apps, { health: 'Unknown' }).sync).toEqual({ Synced: 0, OutOfSync: 0, Unknown: 1 });
  });
});
