import { describe, expect, test } from 'vitest';
import { GAP_X, layoutWorkflow, NODE_H, NODE_W, phaseTone } from './workflowGraph';

const n = (id: string, children: string[] = [], phase = 'Succeeded') => ({ id, name: id, displayName: id, type: 'Pod', phase, children });

describe('layoutWorkflow', () => {
  test('a diamond DAG: a node sits after all it depends on, edges join right to left', () => {
    // root → a, b; a → c; b → c; c → d
    const l = layoutWorkflow([n('root', ['a', 'b']), n('a', ['c']), n('b', ['c']), n('c', ['d']), n('d')]);
    const col = Object.fromEntries(l.nodes.map((p) => [p.node.id, p.col]));
    expect(col).toEqual({ root: 0, a: 1, b: 1, c: 2, d: 3 });
    const rowOf = (id: string) => l.nodes.find((p) => p.node.id === id)!.row;
    expect([rowOf('a'), rowOf('b')]).toEqual([0, 1]);
    expect(l.edges).toHaveLength(5);
    const e = l.edges.find((x) => x.from === 'a' && x.to === 'c')!;
    expect(e.x1).toBe(NODE_W + 0 * (NODE_W + GAP_X) + NODE_W + GAP_X);
    expect(e.x2).toBe(2 * (NODE_W + GAP_X));
    expect(e.y2).toBe(NODE_H / 2);
    expect(l.width).toBe(4 * NODE_W + 3 * GAP_X);
  });

  test('a longer path pushes a shared child to the later column', () => {
    // root → x → y → z and root → z: z comes after y
    const l = layoutWorkflow([n('root', ['x', 'z']), n('x', ['y']), n('y', ['z']), n('z')]);
    expect(l.nodes.find((p) => p.node.id === 'z')!.col).toBe(3);
  });

  test('children that are not nodes, self-loops and cycles do not break the layout', () => {
    const l = layoutWorkflow([n('a', ['b', 'ghost', 'a']), n('b', ['a'])]);
    expect(l.nodes).toHaveLength(2);
    expect(Math.max(...l.nodes.map((p) => p.col))).toBeLessThan(2);
    expect(l.edges.every((e) => e.to !== 'ghost' && e.from !== e.to)).toBe(true);
  });

  test('nothing to draw', () => {
    expect(layoutWorkflow([])).toEqual({ nodes: [], edges: [], width: 0, height: 0 });
  });

  test('children null (an archived node without children)', () => {
    const l = layoutWorkflow([{ ...n('a'), children: null }]);
    expect(l.nodes[0]).toMatchObject({ col: 0, row: 0, x: 0, y: 0 });
  });
});

test('phaseTone', () => {
  expect(['Succeeded', 'Failed', 'Error', 'Running', 'Pending', 'Skipped'].map(phaseTone)).toEqual(['success', 'danger', 'danger', 'info', 'warning', 'neutral']);
});
