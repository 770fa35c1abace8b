// An application's resource tree as rows of an indented tree: the managed resources at the
// top (those not live yet too), the objects they own below (Deployment → ReplicaSet → Pod),
// with the guide lines each row draws.
import type { ResourceStatus, TreeNode } from '../api/apps';
import { resourceId } from './apps';

export interface TreeRow {
  /** Unique among the rows: the object's UID, or its resource id when it is not live. */
  id: string;
  node: TreeNode;
  depth: number;
  /** A resource the application manages (a top-level row). */
  managed: boolean;
  /** Managed but not in the cluster (Missing): it comes from the app's resources, not the tree. */
  missing: boolean;
  /** Wants pruning: live, but git no longer has it. */
  requiresPruning: boolean;
  /** For each level above this row (1 … depth-1): does a vertical guide line pass through? */
  guides: boolean[];
  /** The last of its siblings (its branch line ends here). */
  last: boolean;
  childCount: number;
  collapsed: boolean;
}

/**
 * The managed resources of an application with their live objects: the tree the app-proxy
 * gave, plus a node for each managed resource the tree does not have (not created yet, or a
 * hook), carrying the resource's sync and health status.
 */
export function mergeTree(tree: TreeNode[], resources: ResourceStatus[] = []): TreeNode[] {
  const out = tree.slice();
  const have = new Set(tree.map((n) => resourceId(n)));
  for (const r of resources) {
    if (have.has(resourceId(r))) continue;
    out.push({
      group: r.group,
      kind: r.kind,
      namespace: r.namespace,
      name: r.name,
      version: r.version,
      uid: '',
      health: r.health ?? { status: 'Missing' },
      sync: r.status,
    });
  }
  return out;
}

/** The tree's rows, depth first, skipping the children of collapsed rows (by row id). */
export function flattenTree(roots: TreeNode[], resources: ResourceStatus[] = [], collapsed: ReadonlySet<string> = new Set()): TreeRow[] {
  const byId = new Map(resources.map((r) => [resourceId(r), r]));
  const rows: TreeRow[] = [];
  const seen = new Set<string>();
  const walk = (nodes: TreeNode[], depth: number, guides: boolean[]) => {
    nodes.forEach((node, i) => {
      const rid = resourceId(node);
      let id = node.uid || rid;
      // Owner references can form a diamond; an id shown twice would confuse React and the reader.
      if (seen.has(id)) id = `${id}#${rows.length}`;
      seen.add(id);
      const last = i === nodes.length - 1;
      const kids = node.children ?? [];
      const status = depth === 0 ? byId.get(rid) : undefined;
      const isCollapsed = kids.length > 0 && collapsed.has(id);
      rows.push({
        id,
        node,
        depth,
        managed: depth === 0,
        missing: depth === 0 && !node.uid,
        requiresPruning: !!status?.requiresPruning,
        guides,
        last,
        childCount: kids.length,
        collapsed: isCollapsed,
      });
      if (!isCollapsed && kids.length) walk(kids, depth + 1, depth === 0 ? [] : [...guides, !last]);
    });
  };
  walk(roots, 0, []);
  return rows;
}

/** How many objects of each kind the tree holds, for the summary line ("1 Deployment · 2 Pods"). */
export function kindCounts(roots: TreeNode[]): [string, number][] {
  const counts = new Map<string, number>();
  const walk = (nodes: TreeNode[]) => {
    for (const n of nodes) {
      if (n.uid) counts.set(n.kind, (counts.get(n.kind) ?? 0) + 1);
      walk(n.children ?? []);
    }
  };
  walk(roots);
  return [...counts.entries()];
}
