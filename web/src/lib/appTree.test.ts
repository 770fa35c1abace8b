import { describe, expect, it } from 'vitest';
import type { ResourceStatus, TreeNode } from '../api/apps';
import { flattenTree, kindCounts, mergeTree } from './appTree';

const healthy = { status: 'Healthy' };
const pod = (name: string, uid: string): TreeNode => ({ kind: 'Pod', namespace: 'web', name, version: 'v1', uid, health: healthy, images: ['nginx:1.27'] });

// What the app-proxy answers for a Deployment with two ReplicaSets (a rollout) and a ConfigMap.
const tree: TreeNode[] = [
  { kind: 'ConfigMap', namespace: 'web', name: 'settings', version: 'v1', uid: 'cm', health: healthy, sync: 'Synced' },
  {
    group: 'apps',
    kind: 'Deployment',
    namespace: 'web',
    name: 'web',
    version: 'v1',
    uid: 'dep',
    health: { status: 'Progressing' },
    sync: 'OutOfSync',
    children: [
      { group: 'apps', kind: 'ReplicaSet', namespace: 'web', name: 'web-1', version: 'v1', uid: 'rs1', health: healthy, children: [pod('web-1-a', 'p1'), pod('web-1-b', 'p2')] },
      { group: 'apps', kind: 'ReplicaSet', namespace: 'web', name: 'web-2', version: 'v1', uid: 'rs2', health: { status: 'Progressing' }, children: [pod('web-2-a', 'p3')] },
    ],
  },
];

const resources: ResourceStatus[] = [
  { kind: 'ConfigMap', namespace: 'web', name: 'settings', version: 'v1', status: 'Synced', health: healthy },
  { group: 'apps', kind: 'Deployment', namespace: 'web', name: 'web', version: 'v1', status: 'OutOfSync', health: { status: 'Progressing' } },
  { kind: 'Service', namespace: 'web', name: 'web', version: 'v1', status: 'OutOfSync', health: { status: 'Missing', message: 'the resource does not exist' } },
  { kind: 'Secret', namespace: 'web', name: 'old', version: 'v1', status: 'OutOfSync', requiresPruning: true, health: healthy },
];

describe('resource tree', () => {
  it('adds managed resources the cluster does not have yet, with their status', () => {
    const roots = mergeTree(tree, resources);
    expect(roots.map((n) => `${n.kind}/${n.name}`)).toEqual(['ConfigMap/settings', 'Deployment/web', 'Service/web', 'Secret/old']);
    const svc = roots[2];
    expect(svc.uid).toBe('');
    expect(svc.sync).toBe('OutOfSync');
    expect(svc.health).toEqual({ status: 'Missing', message: 'the resource does not exist' });
    // Nothing added twice when the tree has them all.
    expect(mergeTree(tree, resources.slice(0, 2))).toHaveLength(2);
  });

  it('flattens depth first: Deployment → ReplicaSet → Pod, with depth and managed flags', () => {
    const rows = flattenTree(mergeTree(tree, resources), resources);
    expect(rows.map((r) => `${'  '.repeat(r.depth)}${r.node.kind}/${r.node.name}`)).toEqual([
      'ConfigMap/settings',
      'Deployment/web',
      '  ReplicaSet/web-1',
      '    Pod/web-1-a',
      '    Pod/web-1-b',
      '  ReplicaSet/web-2',
      '    Pod/web-2-a',
      'Service/web',
      'Secret/old',
    ]);
    expect(rows.filter((r) => r.managed).map((r) => r.node.name)).toEqual(['settings', 'web', 'web', 'old']);
    expect(rows.find((r) => r.node.kind === 'Service')!.missing).toBe(true);
    expect(rows.find((r) => r.node.kind === 'Deployment')!.missing).toBe(false);
    expect(rows.find((r) => r.node.kind === 'Secret')!.requiresPruning).toBe(true);
    expect(rows.find((r) => r.node.kind === 'Deployment')!.childCount).toBe(2);
    expect(new Set(rows.map((r) => r.id)).size).toBe(rows.length);
  });

  it('draws the guide lines: a line continues past a ReplicaSet that has a sibling below', () => {
    const rows = flattenTree(tree);
    const at = (name: string) => rows.find((r) => r.node.name === name)!;
    expect(at('web-1')).toMatchObject({ depth: 1, guides: [], last: false });
    expect(at('web-1-a')).toMatchObject({ depth: 2, guides: [true], last: false });
    expect(at('web-1-b')).toMatchObject({ depth: 2, guides: [true], last: true });
    expect(at('web-2')).toMatchObject({ depth: 1, guides: [], last: true });
    // Under the last ReplicaSet no line runs on.
    expect(at('web-2-a')).toMatchObject({ depth: 2, guides: [false], last: true });
  });

  it('hides the children of a collapsed row', () => {
    const rows = flattenTree(tree, [], new Set(['rs1']));
    expect(rows.map((r) => r.node.name)).toEqual(['settings', 'web', 'web-1', 'web-2', 'web-2-a']);
    expect(rows.find((r) => r.id === 'rs1')!.collapsed).toBe(true);
    // A row without children is never collapsed.
    expect(flattenTree(tree, [], new Set(['cm']))[0].collapsed).toBe(false);
  });

  it('gives an object reached twice (shared owners) a row id of its own', () => {
    const shared = pod('shared', 'p9');
    const t: TreeNode[] = [
      { kind: 'A', name: 'a', version: 'v1', uid: 'a', health: healthy, children: [shared] },
      { kind: 'B', name: 'b', version: 'v1', uid: 'b', health: healthy, children: [shared] },
    ];
    const ids = flattenTree(t).map((r) => r.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('counts live objects by kind', () => {
    expect(kindCounts(mergeTree(tree, resources))).toEqual([
      ['ConfigMap', 1],
      ['Deployment', 1],
      ['ReplicaSet', 2],
      ['Pod', 3],
    ]);
  });
});
