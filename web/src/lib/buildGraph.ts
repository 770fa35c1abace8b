// A build's steps as columns, one per stage, with the children of a parallel step shown
// together under it. See specOutline.ts for where the nesting comes from.
import type { SpecOutline, StepNode } from './specOutline';

export interface StepLike {
  name: string;
  stage?: string;
}

export interface GraphNode<S extends StepLike> {
  step: S;
  /** The steps a parallel step runs at the same time; empty for other steps. */
  children: GraphNode<S>[];
}

export interface GraphColumn<S extends StepLike> {
  /** The stage's name; '' when the pipeline declares no stages. */
  stage: string;
  nodes: GraphNode<S>[];
}

function names(nodes: StepNode[], into: Set<string>): Set<string> {
  for (const n of nodes) {
    into.add(n.name);
    names(n.children, into);
  }
  return into;
}

/** Whether an outline describes these steps: every step of the build appears in it. */
export function outlineFits(steps: StepLike[], outline: SpecOutline | undefined): outline is SpecOutline {
  if (!outline) return false;
  const known = names(outline.steps, new Set());
  return steps.length > 0 && steps.every((s) => known.has(s.name));
}

/**
 * Top-level nodes: nested by the outline when it fits, else every step on its own. The API
 * lists a step once the runner reports it; `missing` makes a stand-in for the outline's steps
 * that are not reported (yet), so the whole pipeline shows from the start.
 */
export function buildTree<S extends StepLike>(steps: S[], outline?: SpecOutline, missing?: (n: StepNode) => S): GraphNode<S>[] {
  if (!outlineFits(steps, outline)) return steps.map((step) => ({ step, children: [] }));
  const byName = new Map(steps.map((s) => [s.name, s]));
  const walk = (nodes: StepNode[]): GraphNode<S>[] => {
    const out: GraphNode<S>[] = [];
    for (const n of nodes) {
      const step = byName.get(n.name) ?? missing?.(n);
      if (step) out.push({ step, children: walk(n.children) });
    }
    return out;
  };
  return walk(outline.steps);
}

/**
 * Columns in stage order: the declared stages first (in their order), then stages only the
 * steps name, in the order they appear. Steps without a stage go to "default" when there are
 * stages, and everything is one column when there are none.
 */
export function buildGraph<S extends StepLike>(steps: S[], outline?: SpecOutline, missing?: (n: StepNode) => S): GraphColumn<S>[] {
  const tree = buildTree(steps, outline, missing);
  const staged = tree.some((n) => n.step.stage) || (outline?.stages.length ?? 0) > 0;
  if (!staged) return tree.length ? [{ stage: '', nodes: tree }] : [];
  const order: string[] = [];
  const cols = new Map<string, GraphNode<S>[]>();
  const declared = outlineFits(steps, outline) ? outline.stages : [];
  for (const s of ['default', ...declared]) if (!order.includes(s)) order.push(s);
  for (const n of tree) {
    const stage = n.step.stage || 'default';
    if (!order.includes(stage)) order.push(stage);
    const list = cols.get(stage);
    if (list) list.push(n);
    else cols.set(stage, [n]);
  }
  return order.filter((s) => cols.has(s)).map((stage) => ({ stage, nodes: cols.get(stage)! }));
}
