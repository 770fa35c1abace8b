// The resource graph with 1,000 resources (issue #21: rendered in ≤ 500 ms), beside the list
// view it replaces: `npx vitest bench --run src/lib/appGraph.bench.ts` (docs/benchmarks.md).
// 100 Deployments, each with a ReplicaSet and 8 Pods, and 10 Services: 1,010 objects. React
// runs its production build when NODE_ENV=production is set (as in the browser).
import { createElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { bench, describe } from 'vitest';
import type { TreeNode } from '../api/apps';
import { ResourceGraph } from '../components/ResourceGraph';
import { flattenTree } from './appTree';
import { layoutGraph, networkGraph, treeGraph } from './appGraph';

const roots: TreeNode[] = [];
const services: TreeNode[] = [];
for (let d = 0; d < 100; d++) {
  const pods = Array.from({ length: 8 }, (_, i) => ({
    kind: 'Pod',
    name: `web-${d}-abc-${i}`,
    namespace: 'prod',
    version: 'v1',
    uid: `pod-${d}-${i}`,
    health: { status: i === 3 ? 'Progressing' : 'Healthy' },
    images: ['nginx:1.27'],
    network: { labels: { app: `web-${d}` } },
  }));
  services.push({ kind: 'Service', name: `web-${d}`, namespace: 'prod', version: 'v1', uid: `svc-${d}`, health: { status: 'Healthy' }, sync: 'Synced', network: { selector: { app: `web-${d}` } } });
  const rs = { kind: 'ReplicaSet', group: 'apps', name: `web-${d}-abc`, namespace: 'prod', version: 'v1', uid: `rs-${d}`, health: { status: 'Healthy' }, children: pods };
  roots.push({ kind: 'Deployment', group: 'apps', name: `web-${d}`, namespace: 'prod', version: 'v1', uid: `dep-${d}`, health: { status: 'Healthy' }, sync: 'Synced', children: [rs] });
}
roots.push(...services.slice(0, 10)); // 10 Services in front of 80 of the Pods (the network view)
const all = new Set(roots.map((r) => `rs-${r.name.slice(4)}`));
const noop = () => {};

describe('1,000 resources', () => {
  bench('baseline: list view rows (flattenTree)', () => {
    flattenTree(roots, []);
  });
  bench('graph model + layout, pods grouped', () => {
    layoutGraph(treeGraph('shop', roots));
  });
  bench('graph model + layout, every pod shown', () => {
    layoutGraph(treeGraph('shop', roots, [], all));
  });
  bench('network model + layout', () => {
    layoutGraph(networkGraph(roots));
  });
  bench('graph model + layout + React render (markup), pods grouped (as the page first draws it)', () => {
    renderToStaticMarkup(createElement(ResourceGraph, { layout: layoutGraph(treeGraph('shop', roots)), onOpen: noop, onExpand: noop, label: 'Resource graph' }));
  });
  bench('graph model + layout + React render (markup), every pod shown', () => {
    renderToStaticMarkup(createElement(ResourceGraph, { layout: layoutGraph(treeGraph('shop', roots, [], all)), onOpen: noop, onExpand: noop, label: 'Resource graph' }));
  });
});
