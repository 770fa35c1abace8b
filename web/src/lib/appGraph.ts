// An application's resource tree as a left-to-right graph, as Argo CD draws it: the
// application, its managed resources, the objects they own (Deployment → ReplicaSet → Pod),
// many Pods of one owner grouped into "+N pods"; or the network view: Ingress → Service → Pods,
// from the Ingresses' backends and the Services' selectors the tree carries. Pure functions:
// the model (nodes and edges) and the layout (positions), measured in appGraph.bench.ts.
import type { ResourceStatus, TreeNode } from '../api/apps';
import { resourceId } from './apps';

export type GraphView = 'tree' | 'network';

export interface GraphNode {
  /** Unique in the graph. */
  id: string;
  /** 'app' (the application), 'resource' (an object) or 'group' (many Pods folded into one). */
  type: 'app' | 'resource' | 'group';
  kind: string;
  name: string;
  namespace?: string;
  group?: string;
  health?: string;
  healthMessage?: string;
  sync?: string;
  /** The tree's object; absent on the app and on group nodes. */
  node?: TreeNode;
  /** A managed resource (top-level in the tree). */
  managed: boolean;
  /** Managed but not in the cluster. */
  missing: boolean;
  requiresPruning: boolean;
  /** A group node: how many Pods it folds and the id it expands. */
  count?: number;
  groupKey?: string;
  /** The column (0: leftmost). */
  column: number;
}

export interface GraphEdge {
  from: string;
  to: string;
}

export interface Graph {
  nodes: GraphNode[];
  edges: GraphEdge[];
}

export interface PlacedNode extends GraphNode {
  x: number;
  y: number;
}

export interface Layout {
  nodes: PlacedNode[];
  /** Each edge with its endpoints: from the right edge of one node to the left edge of the next. */
  edges: { from: string; to: string; x1: number; y1: number; x2: number; y2: number }[];
  width: number;
  height: number;
}

/** Node box and spacing, in CSS pixels (ResourceGraph draws at these). */
export const NODE_W = 232;
export const NODE_H = 56;
export const COL_GAP = 56;
export const ROW_GAP = 12;

/** More Pods than this under one parent are folded into a group node (the first few stay). */
export const GROUP_OVER = 5;
/** How many Pods stay shown beside the group node. */
export const GROUP_SHOW = 3;

const HEALTH_RANK: Record<string, number> = { Degraded: 5, Missing: 4, Progressing: 3, Suspended: 2, Unknown: 1, Healthy: 0 };

/** The worst health of the statuses given (Degraded first), for a group node. */
export function worstHealth(statuses: (string | undefined)[]): string | undefined {
  let worst: string | undefined;
  for (const s of statuses) {
    if (!s) continue;
    if (worst === undefined || (HEALTH_RANK[s] ?? 1) > (HEALTH_RANK[worst] ?? 1)) worst = s;
  }
  return worst;
}

const isPod = (n: TreeNode) => n.kind === 'Pod' && !n.group;

/** The node id of a tree object: its UID, or its resource id when it is not live. */
export function nodeId(n: TreeNode): string {
  return n.uid || 'res:' + resourceId(n);
}

function resourceNode(n: TreeNode, column: number, managed: boolean, pruning: Set<string>): GraphNode {
  return {
    id: nodeId(n),
    type: 'resource',
    kind: n.kind,
    name: n.name,
    namespace: n.namespace,
    group: n.group,
    health: n.health?.status,
    healthMessage: n.health?.message,
    sync: managed ? n.sync : undefined,
    node: n,
    managed,
    missing: managed && !n.uid,
    requiresPruning: managed && pruning.has(resourceId(n)),
    column,
  };
}

/** Pods past GROUP_SHOW under one parent, unless that parent's group is expanded. */
function foldPods(parent: string, kids: TreeNode[], expanded: ReadonlySet<string>): { shown: TreeNode[]; folded: TreeNode[] } {
  const pods = kids.filter(isPod);
  if (pods.length <= GROUP_OVER || expanded.has(parent)) return { shown: kids, folded: [] };
  const keep = new Set(pods.slice(0, GROUP_SHOW));
  return { shown: kids.filter((k) => !isPod(k) || keep.has(k)), folded: pods.filter((p) => !keep.has(p)) };
}

function groupNode(parent: string, folded: TreeNode[], column: number): GraphNode {
  return {
    id: `group:${parent}`,
    type: 'group',
    kind: 'Pod',
    name: `+${folded.length} pods`,
    health: worstHealth(folded.map((p) => p.health?.status)),
    managed: false,
    missing: false,
    requiresPruning: false,
    count: folded.length,
    groupKey: parent,
    column,
  };
}

/**
 * The tree view: the application (column 0), its managed resources (column 1) and what they
 * own, right of them. expanded holds the parents whose Pods are all shown.
 */
export function treeGraph(appName: string, roots: TreeNode[], resources: ResourceStatus[] = [], expanded: ReadonlySet<string> = new Set()): Graph {
  const pruning = new Set(resources.filter((r) => r.requiresPruning).map(resourceId));
  const nodes: GraphNode[] = [{ id: 'app', type: 'app', kind: 'Application', name: appName, managed: false, missing: false, requiresPruning: false, column: 0 }];
  const edges: GraphEdge[] = [];
  const seen = new Set<string>(['app']);
  const walk = (parent: string, kids: TreeNode[], column: number, managed: boolean) => {
    const { shown, folded } = managed ? { shown: kids, folded: [] as TreeNode[] } : foldPods(parent, kids, expanded);
    for (const k of shown) {
      const n = resourceNode(k, column, managed, pruning);
      if (seen.has(n.id)) continue; // an owner-reference diamond: drawn once
      seen.add(n.id);
      nodes.push(n);
      edges.push({ from: parent, to: n.id });
      if (k.children?.length) walk(n.id, k.children, column + 1, false);
    }
    if (folded.length) {
      const g = groupNode(parent, folded, column);
      nodes.push(g);
      edges.push({ from: parent, to: g.id });
    }
  };
  walk('app', roots, 1, true);
  return { nodes, edges };
}

function flatten(roots: TreeNode[]): TreeNode[] {
  const out: TreeNode[] = [];
  const walk = (ns: TreeNode[]) => {
    for (const n of ns) {
      out.push(n);
      if (n.children) walk(n.children);
    }
  };
  walk(roots);
  return out;
}

function matches(selector: Record<string, string>, labels: Record<string, string> | undefined): boolean {
  if (!labels) return false;
  for (const k in selector) if (labels[k] !== selector[k]) return false;
  return true;
}

/**
 * The network view: Ingresses (column 0) → the Services they route to (column 1) → the Pods
 * the Services select (column 2). Services and Pods no Ingress or Service reaches are left out;
 * many Pods behind one Service are folded as in the tree view.
 */
export function networkGraph(roots: TreeNode[], resources: ResourceStatus[] = [], expanded: ReadonlySet<string> = new Set()): Graph {
  const pruning = new Set(resources.filter((r) => r.requiresPruning).map(resourceId));
  const managedIds = new Set(roots.map(nodeId));
  const all = flatten(roots);
  const ingresses = all.filter((n) => n.kind === 'Ingress' && n.uid);
  const services = all.filter((n) => n.kind === 'Service' && !n.group && n.uid);
  const pods = all.filter((n) => isPod(n) && n.uid);
  const nodes: GraphNode[] = [];
  const edges: GraphEdge[] = [];
  const placed = new Set<string>();
  const add = (n: TreeNode, column: number) => {
    const id = nodeId(n);
    if (placed.has(id)) return id;
    placed.add(id);
    nodes.push(resourceNode(n, column, managedIds.has(id), pruning));
    return id;
  };
  // Pods by namespace, for the selectors.
  const podsByNs = new Map<string, TreeNode[]>();
  for (const p of pods) {
    const ns = p.namespace ?? '';
    const list = podsByNs.get(ns);
    if (list) list.push(p);
    else podsByNs.set(ns, [p]);
  }
  const svcByKey = new Map(services.map((s) => [`${s.namespace ?? ''}/${s.name}`, s]));
  const reached = new Set<TreeNode>();
  for (const ing of ingresses) {
    const id = add(ing, 0);
    for (const b of ing.network?.backends ?? []) {
      const s = svcByKey.get(`${ing.namespace ?? ''}/${b}`);
      if (!s) continue;
      reached.add(s);
      edges.push({ from: id, to: add(s, 1) });
    }
  }
  // Services no Ingress routes to still lead to their Pods.
  const order = [...services.filter((s) => reached.has(s)), ...services.filter((s) => !reached.has(s))];
  for (const s of order) {
    const sel = s.network?.selector;
    const selected = sel ? (podsByNs.get(s.namespace ?? '') ?? []).filter((p) => matches(sel, p.network?.labels)) : [];
    if (!reached.has(s) && selected.length === 0) continue;
    const sid = add(s, 1);
    const { shown, folded } = foldPods(sid, selected, expanded);
    for (const p of shown) edges.push({ from: sid, to: add(p, 2) });
    if (folded.length) {
      const g = groupNode(sid, folded, 2);
      nodes.push(g);
      edges.push({ from: sid, to: g.id });
    }
  }
  return { nodes, edges };
}

/**
 * Positions: x by column; y so that each node's children sit in a block to its right and the
 * node is centred on them (a tidy tree, one pass). A node with several parents (the network
 * view) is placed under its first. Linear in nodes and edges.
 */
export function layoutGraph(g: Graph): Layout {
  const byId = new Map(g.nodes.map((n) => [n.id, n]));
  const kids = new Map<string, string[]>();
  const hasParent = new Set<string>();
  for (const e of g.edges) {
    if (hasParent.has(e.to)) continue; // placed under its first parent only
    hasParent.add(e.to);
    const list = kids.get(e.from);
    if (list) list.push(e.to);
    else kids.set(e.from, [e.to]);
  }
  const y = new Map<string, number>();
  const step = NODE_H + ROW_GAP;
  let next = 0;
  // Iterative post-order: a deep tree must not overflow the stack.
  const place = (root: string) => {
    const stack: [string, number][] = [[root, 0]];
    while (stack.length) {
      const top = stack[stack.length - 1];
      const [id, i] = top;
      const ks = kids.get(id) ?? [];
      if (i < ks.length) {
        top[1] = i + 1;
        if (!y.has(ks[i])) stack.push([ks[i], 0]);
        continue;
      }
      stack.pop();
      if (y.has(id)) continue;
      const placedKids = ks.filter((k) => y.has(k));
      if (placedKids.length === 0) {
        y.set(id, next);
        next += step;
      } else {
        y.set(id, (y.get(placedKids[0])! + y.get(placedKids[placedKids.length - 1])!) / 2);
      }
    }
  };
  for (const n of g.nodes) if (!hasParent.has(n.id)) place(n.id);
  for (const n of g.nodes) if (!y.has(n.id)) place(n.id);
  let maxCol = 0;
  const nodes: PlacedNode[] = g.nodes.map((n) => {
    maxCol = Math.max(maxCol, n.column);
    return { ...n, x: n.column * (NODE_W + COL_GAP), y: y.get(n.id) ?? 0 };
  });
  const pos = new Map(nodes.map((n) => [n.id, n]));
  const edges = g.edges.flatMap((e) => {
    const a = pos.get(e.from);
    const b = pos.get(e.to);
    if (!a || !b || !byId.has(e.from)) return [];
    return [{ from: e.from, to: e.to, x1: a.x + NODE_W, y1: a.y + NODE_H / 2, x2: b.x, y2: b.y + NODE_H / 2 }];
  });
  return { nodes, edges, width: (maxCol + 1) * (NODE_W + COL_GAP) - COL_GAP, height: Math.max(0, next - ROW_GAP) };
}
