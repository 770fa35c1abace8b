import { describe, expect, it } from 'vitest';
import type { TreeNode } from '../api/apps';
import { GROUP_SHOW, NODE_H, NODE_W, ROW_GAP, layoutGraph, networkGraph, treeGraph, worstHealth } from './appGraph';

const node = (kind: string, name: string, health = 'Healthy', extra: Partial<TreeNode> = {}): TreeNode => ({
  kind,
  name,
  namespace: 'prod',
  version: 'v1',
  uid: `${kind}-${name}`,
  health: { status: health },
  ...extra,
});

function deployment(name: string, pods: number, health = (i: number) => (i === 0 ? 'Healthy' : 'Healthy')): TreeNode {
  const rs = node('ReplicaSet', `${name}-rs`, 'Healthy', {
    group: 'apps',
    children: Array.from({ length: pods }, (_, i) => node('Pod', `${name}-${i}`, health(i), { network: { labels: { app: name } } })),
  });
  return node('Deployment', name, 'Healthy', { group: 'apps', sync: 'Synced', children: [rs] });
}

describe('treeGraph', () => {
  it('draws app → managed → owned, left to right', () => {
    const g = treeGraph('shop', [deployment('web', 2), node('ConfigMap', 'settings', 'Healthy', { sync: 'OutOfSync' })]);
    expect(g.nodes.map((n) => `${n.column}:${n.kind}:${n.name}`)).toEqual(['0:Application:shop', '1:Deployment:web', '2:ReplicaSet:web-rs', '3:Pod:web-0', '3:Pod:web-1', '1:ConfigMap:settings']);
    expect(g.edges).toContainEqual({ from: 'app', to: 'Deployment-web' });
    expect(g.edges).toContainEqual({ from: 'ReplicaSet-web-rs', to: 'Pod-web-1' });
    // Sync is a managed resource's only.
    expect(g.nodes.find((n) => n.kind === 'ConfigMap')!.sync).toBe('OutOfSync');
    expect(g.nodes.find((n) => n.kind === 'ReplicaSet')!.sync).toBeUndefined();
  });

  it('folds many pods into "+N pods" with the worst health, until expanded', () => {
    const roots = [deployment('web', 20, (i) => (i === 17 ? 'Degraded' : 'Healthy'))];
    const g = treeGraph('shop', roots);
    const pods = g.nodes.filter((n) => n.type === 'resource' && n.kind === 'Pod');
    expect(pods).toHaveLength(GROUP_SHOW);
    const group = g.nodes.find((n) => n.type === 'group')!;
    expect(group).toMatchObject({ name: `+${20 - GROUP_SHOW} pods`, count: 20 - GROUP_SHOW, health: 'Degraded', groupKey: 'ReplicaSet-web-rs', column: 3 });
    expect(g.edges).toContainEqual({ from: 'ReplicaSet-web-rs', to: group.id });
    const all = treeGraph('shop', roots, [], new Set(['ReplicaSet-web-rs']));
    expect(all.nodes.filter((n) => n.kind === 'Pod')).toHaveLength(20);
    expect(all.nodes.some((n) => n.type === 'group')).toBe(false);
  });

  it('marks missing and pruning resources', () => {
    const missing: TreeNode = { kind: 'Service', name: 'web', namespace: 'prod', version: 'v1', uid: '', health: { status: 'Missing' }, sync: 'OutOfSync' };
    const g = treeGraph('shop', [missing, node('ConfigMap', 'old')], [{ kind: 'ConfigMap', name: 'old', namespace: 'prod', version: 'v1', status: 'OutOfSync', requiresPruning: true }]);
    expect(g.nodes.find((n) => n.kind === 'Service')).toMatchObject({ id: 'res:/Service/prod/web', missing: true });
    expect(g.nodes.find((n) => n.kind === 'ConfigMap')!.requiresPruning).toBe(true);
  });

  it('worstHealth orders Degraded over Missing over Progressing over Healthy', () => {
    expect(worstHealth(['Healthy', 'Progressing', undefined])).toBe('Progressing');
    expect(worstHealth(['Missing', 'Degraded', 'Healthy'])).toBe('Degraded');
    expect(worstHealth([])).toBeUndefined();
  });
});

describe('networkGraph', () => {
  it('links Ingress → Service by backend and Service → Pods by selector, in the same namespace', () => {
    const roots = [
      node('Ingress', 'web', 'Healthy', { group: 'networking.k8s.io', network: { backends: ['web', 'gone'] } }),
      node('Service', 'web', 'Healthy', { network: { selector: { app: 'web' } } }),
      node('Service', 'internal', 'Healthy', { network: { selector: { app: 'api' } } }),
      node('Service', 'lonely', 'Healthy', { network: { selector: { app: 'nothing' } } }),
      deployment('web', 2),
      deployment('api', 1),
      node('Service', 'web', 'Healthy', { namespace: 'other', uid: 'svc-other', network: { selector: { app: 'web' } } }),
    ];
    const g = networkGraph(roots);
    expect(g.nodes.map((n) => `${n.column}:${n.kind}:${n.name}`)).toEqual(['0:Ingress:web', '1:Service:web', '2:Pod:web-0', '2:Pod:web-1', '1:Service:internal', '2:Pod:api-0']);
    expect(g.edges).toEqual([
      { from: 'Ingress-web', to: 'Service-web' },
      { from: 'Service-web', to: 'Pod-web-0' },
      { from: 'Service-web', to: 'Pod-web-1' },
      { from: 'Service-internal', to: 'Pod-api-0' },
    ]);
  });
});

describe('layoutGraph', () => {
  it('puts columns side by side and centres each parent on its children', () => {
    const l = layoutGraph(treeGraph('shop', [deployment('web', 3), node('ConfigMap', 'settings')]));
    const at = (name: string) => l.nodes.find((n) => n.name === name)!;
    const step = NODE_H + ROW_GAP;
    expect([at('web-0').y, at('web-1').y, at('web-2').y, at('settings').y]).toEqual([0, step, 2 * step, 3 * step]);
    expect(at('web-rs').y).toBe(step);
    expect(at('web').y).toBe(step);
    expect(at('shop').y).toBe((step + 3 * step) / 2);
    expect(at('web-rs').x).toBe(2 * (at('web').x - at('shop').x));
    expect(l.height).toBe(4 * step - ROW_GAP);
    expect(l.width).toBe(4 * NODE_W + 3 * (at('web').x - NODE_W));
    const e = l.edges.find((x) => x.to === 'Pod-web-2')!;
    expect(e).toMatchObject({ x1: at('web-rs').x + NODE_W, y1: at('web-rs').y + NODE_H / 2, x2: at('web-2').x, y2: at('web-2').y + NODE_H / 2 });
  });

  it('places a node with two parents once, under the first', () => {
    const l = layoutGraph({
      nodes: [
        { id: 'a', type: 'resource', kind: 'Service', name: 'a', managed: true, missing: false, requiresPruning: false, column: 0 },
        { id: 'b', type: 'resource', kind: 'Service', name: 'b', managed: true, missing: false, requiresPruning: false, column: 0 },
        { id: 'p', type: 'resource', kind: 'Pod', name: 'p', managed: false, missing: false, requiresPruning: false, column: 1 },
      ],
      edges: [
        { from: 'a', to: 'p' },
        { from: 'b', to: 'p' },
      ],
    });
    expect(l.nodes.map((n) => n.y)).toEqual([0, NODE_H + ROW_GAP, 0]);
    expect(l.edges).toHaveLength(2);
  });

  it('lays out a deep chain (the server bounds depth at 6; this is far past it)', () => {
    let n: TreeNode = node('Pod', 'leaf');
    for (let i = 0; i < 500; i++) n = node('ReplicaSet', `rs${i}`, 'Healthy', { children: [n] });
    const l = layoutGraph(treeGraph('deep', [n]));
    expect(l.nodes).toHaveLength(502);
    expect(new Set(l.nodes.map((x) => x.y))).toEqual(new Set([0]));
  });
});
