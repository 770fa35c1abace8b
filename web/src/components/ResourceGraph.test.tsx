import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { TreeNode } from '../api/apps';
import { layoutGraph, treeGraph } from '../lib/appGraph';
import { ResourceGraph } from './ResourceGraph';

const noop = () => {};
const pod = (i: number, health = 'Healthy'): TreeNode => ({ kind: 'Pod', name: `web-${i}`, namespace: 'prod', version: 'v1', uid: `p${i}`, health: { status: health } });

describe('ResourceGraph', () => {
  const roots: TreeNode[] = [
    {
      kind: 'Deployment',
      group: 'apps',
      name: 'web',
      namespace: 'prod',
      version: 'v1',
      uid: 'd',
      health: { status: 'Degraded', message: 'not ready' },
      sync: 'OutOfSync',
      children: [{ kind: 'ReplicaSet', group: 'apps', name: 'web-rs', namespace: 'prod', version: 'v1', uid: 'rs', health: { status: 'Healthy' }, children: Array.from({ length: 9 }, (_, i) => pod(i, i === 8 ? 'Progressing' : 'Healthy')) }],
    },
  ];
  const html = renderToStaticMarkup(<ResourceGraph layout={layoutGraph(treeGraph('shop', roots))} onOpen={noop} onExpand={noop} label="Resource graph" selected="d" />);

  it('draws each node as a button named by its visible text and status, positioned by the layout', () => {
    const buttons = html.match(/<button[^>]*data-testid="graph-node"[^>]*>/g) ?? [];
    expect(buttons).toHaveLength(1 + 1 + 1 + 3 + 1); // app, Deployment, ReplicaSet, 3 Pods, the group
    expect(html).not.toContain('aria-label="Deployment');
    expect(html).toMatch(/Deployment<\/span> <span class="graph-node-name">web<\/span><span class="visually-hidden">, in prod, Degraded, OutOfSync<\/span>/);
    expect(html).toMatch(/class="graph-node graph-node-danger graph-node-resource graph-node-selected"[^>]*style="left:288px;top:\d+px;width:232px;height:56px"/);
    expect(html).toContain('aria-pressed="true"');
  });

  it('folds the Pods past three into one node with the worst health of the rest', () => {
    expect(html).toMatch(/data-type="group"[^>]*data-health="Progressing"/);
    expect(html).toContain('+6 pods</span><span class="visually-hidden">, Progressing at worst: show them</span>');
  });

  it('draws one edge per link, behind the nodes, hidden from screen readers', () => {
    expect(html).toMatch(/<svg class="graph-edges"[^>]*aria-hidden="true"/);
    const edges = html.match(/<svg class="graph-edges".*?<\/svg>/)![0];
    expect(edges.match(/<path d="M[\d.]+,[\d.]+ C/g)).toHaveLength(6);
    expect(html.match(/<svg class="kind-icon"/g)).toHaveLength(7);
  });
});
