// The node tree of an Argo Workflow as a left-to-right graph: each node in the column of its
// longest path from a root (so a node comes after everything that leads to it), in the order of
// its first parent within the column; edges follow the nodes' children. Pure: the run page
// draws what this returns, and the tests check it.

export interface GraphInput {
  id: string;
  displayName: string;
  name: string;
  type: string;
  phase: string;
  children: string[] | null;
}

export interface PlacedNode<N extends GraphInput> {
  node: N;
  col: number;
  row: number;
  x: number;
  y: number;
}

export interface GraphEdge {
  from: string;
  to: string;
  /** Start (right side of from) and end (left side of to). */
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

export interface GraphLayout<N extends GraphInput> {
  nodes: PlacedNode<N>[];
  edges: GraphEdge[];
  width: number;
  height: number;
}

export const NODE_W = 180;
export const NODE_H = 48;
export const GAP_X = 48;
export const GAP_Y = 16;

/** Lays out nodes left to right. Children that are not among the nodes are ignored; a cycle
 * (which Argo never reports) cannot loop: a node's column is bounded by the number of nodes. */
export function layoutWorkflow<N extends GraphInput>(nodes: readonly N[]): GraphLayout<N> {
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const parents = new Map<string, string[]>();
  for (const n of nodes) {
    for (const c of n.children ?? []) {
      if (!byId.has(c) || c === n.id) continue;
      parents.set(c, [...(parents.get(c) ?? []), n.id]);
    }
  }
  // Column: the longest path from a root, by relaxation bounded by the node count.
  const col = new Map<string, number>(nodes.map((n) => [n.id, 0]));
  for (let round = 0; round < nodes.length; round++) {
    let changed = false;
    for (const n of nodes) {
      const c = col.get(n.id)!;
      for (const k of n.children ?? []) {
        if (!byId.has(k) || k === n.id) continue;
        if (col.get(k)! < c + 1 && c + 1 < nodes.length) {
          col.set(k, c + 1);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  // Rows: within a column, by the row of the first parent, then the input order.
  const order = new Map(nodes.map((n, i) => [n.id, i]));
  const columns: N[][] = [];
  for (const n of nodes) (columns[col.get(n.id)!] ??= []).push(n);
  const row = new Map<string, number>();
  columns.forEach((list, ci) => {
    const key = (n: N) => {
      if (ci === 0) return order.get(n.id)!;
      const ps = (parents.get(n.id) ?? []).filter((p) => row.has(p));
      return ps.length ? Math.min(...ps.map((p) => row.get(p)!)) : Number.MAX_SAFE_INTEGER;
    };
    const sorted = [...list].sort((a, b) => key(a) - key(b) || order.get(a.id)! - order.get(b.id)!);
    sorted.forEach((n, ri) => row.set(n.id, ri));
    columns[ci] = sorted;
  });
  const placed: PlacedNode<N>[] = [];
  columns.forEach((list, ci) =>
    list.forEach((n, ri) => placed.push({ node: n, col: ci, row: ri, x: ci * (NODE_W + GAP_X), y: ri * (NODE_H + GAP_Y) })),
  );
  const at = new Map(placed.map((p) => [p.node.id, p]));
  const edges: GraphEdge[] = [];
  for (const p of placed) {
    for (const c of p.node.children ?? []) {
      const q = at.get(c);
      if (!q || c === p.node.id) continue;
      edges.push({ from: p.node.id, to: c, x1: p.x + NODE_W, y1: p.y + NODE_H / 2, x2: q.x, y2: q.y + NODE_H / 2 });
    }
  }
  const cols = columns.length;
  const rows = Math.max(0, ...columns.map((l) => l.length));
  return {
    nodes: placed,
    edges,
    width: cols ? cols * NODE_W + (cols - 1) * GAP_X : 0,
    height: rows ? rows * NODE_H + (rows - 1) * GAP_Y : 0,
  };
}

/** The tone of a node's or a workflow's phase, for its colour. */
export function phaseTone(phase: string): 'success' | 'danger' | 'info' | 'warning' | 'neutral' {
  switch (phase) {
    case 'Succeeded':
      return 'success';
    case 'Failed':
    case 'Error':
      return 'danger';
    case 'Running':
      return 'info';
    case 'Pending':
      return 'warning';
    default:
      return 'neutral';
  }
}

/** Whether a phase is final. */
export const finished = (phase: string) => ['Succeeded', 'Failed', 'Error', 'Skipped', 'Omitted'].includes(phase);
