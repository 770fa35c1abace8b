// The steps of a pipeline spec (codefresh.yml) as the editor's graph draws them: stages, steps
// and parallel groups with their children, with the markers that change how a step runs (when,
// fail_fast: false). Read with yamlLite as the text is typed; the server's lint stays the
// judge of what is valid, this only has to say where the text stops being YAML or a pipeline.
import { get, parseYaml, type YEntry, type YNode, type YamlProblem } from './yamlLite';
import { buildGraph, type GraphColumn } from './buildGraph';
import type { SpecOutline, StepNode } from './specOutline';

export interface SpecStep {
  name: string;
  stage?: string;
  title?: string;
  /** The step's type: "freestyle" when it has none. */
  type: string;
  /** 1-based line of the step's name. */
  line: number;
  /** What the step's when asks, in a few words ("branch main", "after build"); empty without when. */
  when: string[];
  /** fail_fast: false — a failure does not stop the pipeline (or the group). */
  continueOnFail: boolean;
  children: SpecStep[];
}

export interface SpecGraph {
  stages: string[];
  mode: 'sequential' | 'parallel';
  steps: SpecStep[];
  /** The pipeline's default is fail_fast: false. */
  continueOnFail: boolean;
}

export type SpecGraphResult = { ok: true; graph: SpecGraph } | { ok: false; error: YamlProblem };

const MAX_NESTING = 8;

class ShapeError extends Error {
  constructor(
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

function scalar(n: YNode | undefined): string | undefined {
  return n?.kind === 'scalar' ? n.value : undefined;
}

function isFalse(n: YNode | undefined): boolean {
  return n?.kind === 'scalar' && !n.quoted && /^(false|False|FALSE)$/.test(n.value);
}

function words(n: YNode | undefined): string[] {
  if (!n) return [];
  if (n.kind === 'scalar') return n.value ? [n.value] : [];
  if (n.kind === 'seq') return n.items.flatMap(words);
  return [];
}

/** A short reading of a when: the branches, "condition", the steps it waits for. */
function whenSummary(n: YNode): string[] {
  if (n.kind !== 'map') return ['when'];
  const out: string[] = [];
  const br = get(n, 'branch')?.value;
  if (br) {
    const only = words(get(br, 'only')?.value);
    const ignore = words(get(br, 'ignore')?.value);
    if (only.length) out.push(`branch ${only.join(', ')}`);
    if (ignore.length) out.push(`not branch ${ignore.join(', ')}`);
    if (!only.length && !ignore.length) out.push('branch');
  }
  if (get(n, 'condition')) out.push('condition');
  const st = get(n, 'steps')?.value;
  if (st) {
    const lists = st.kind === 'map' ? [get(st, 'all')?.value, get(st, 'any')?.value] : [st];
    const names: string[] = [];
    for (const l of lists) {
      if (l?.kind !== 'seq') continue;
      for (const it of l.items) {
        const name = it.kind === 'map' ? scalar(get(it, 'name')?.value) : scalar(it);
        const on = it.kind === 'map' ? words(get(it, 'on')?.value) : [];
        if (name) names.push(on.length && !(on.length === 1 && on[0] === 'success') ? `${name} (${on.join(', ')})` : name);
      }
    }
    out.push(names.length ? `after ${names.join(', ')}` : 'after steps');
  }
  return out.length ? out : ['when'];
}

function stepsOf(e: YEntry, depth: number, parentStage: string | undefined): SpecStep[] {
  const v = e.value;
  if (v.kind === 'scalar' && v.value === '' && !v.quoted) return [];
  if (v.kind !== 'map') throw new ShapeError(e.line, `"${e.key}" must be a mapping of step name to step${v.kind === 'seq' ? ', not a list' : ''}`);
  if (depth > MAX_NESTING) throw new ShapeError(e.line, `parallel steps are nested more than ${MAX_NESTING} deep`);
  const out: SpecStep[] = [];
  for (const s of v.entries) {
    const body = s.value;
    if (body.kind !== 'map') {
      if (body.kind === 'scalar' && body.value === '' && !body.quoted) {
        out.push({ name: s.key, line: s.line, type: 'freestyle', stage: parentStage, when: [], continueOnFail: false, children: [] });
        continue;
      }
      throw new ShapeError(s.line, `step "${s.key}" must be a mapping of its fields (image, commands, …)`);
    }
    const type = scalar(get(body, 'type')?.value) || 'freestyle';
    const stage = scalar(get(body, 'stage')?.value) || parentStage;
    const title = get(body, 'title')?.value;
    const when = get(body, 'when')?.value;
    const step: SpecStep = {
      name: s.key,
      line: s.line,
      type,
      stage: stage || undefined,
      title: title?.kind === 'scalar' && title.value && !title.value.includes('\n') ? title.value : undefined,
      when: when ? whenSummary(when) : [],
      continueOnFail: isFalse(get(body, 'fail_fast')?.value),
      children: [],
    };
    const nested = get(body, 'steps');
    if (type === 'parallel' && nested) step.children = stepsOf(nested, depth + 1, step.stage);
    out.push(step);
  }
  return out;
}

/** Reads a spec's steps for the graph, or the first problem with its line. */
export function specGraph(text: string): SpecGraphResult {
  const y = parseYaml(text);
  if (!y.ok) return y;
  const root = y.doc;
  if (!root) return { ok: true, graph: { stages: [], mode: 'sequential', steps: [], continueOnFail: false } };
  if (root.kind !== 'map') return { ok: false, error: { line: root.line, column: 1, message: 'the spec must be a mapping with "version" and "steps"' } };
  try {
    const st = get(root, 'stages');
    let stages: string[] = [];
    if (st) {
      if (st.value.kind !== 'seq' && !(st.value.kind === 'scalar' && st.value.value === '')) throw new ShapeError(st.line, '"stages" must be a list of stage names');
      stages = words(st.value);
    }
    const steps = get(root, 'steps');
    const mode = scalar(get(root, 'mode')?.value) === 'parallel' ? 'parallel' : 'sequential';
    return {
      ok: true,
      graph: { stages, mode, steps: steps ? stepsOf(steps, 0, undefined) : [], continueOnFail: isFalse(get(root, 'fail_fast')?.value) },
    };
  } catch (e) {
    if (e instanceof ShapeError) return { ok: false, error: { line: e.line, column: 1, message: e.message } };
    throw e;
  }
}

/** Every step, nested ones after their group, in the order written. */
export function flatSteps(steps: SpecStep[]): SpecStep[] {
  return steps.flatMap((s) => [s, ...flatSteps(s.children)]);
}

function outlineOf(g: SpecGraph): SpecOutline {
  const walk = (ss: SpecStep[]): StepNode[] => ss.map((s) => ({ name: s.name, stage: s.stage, title: s.title, children: walk(s.children) }));
  return { stages: g.stages, steps: walk(g.steps) };
}

/** The graph's columns, one per stage, as the build page draws a build of this spec. */
export function specColumns(g: SpecGraph): GraphColumn<SpecStep>[] {
  return buildGraph(flatSteps(g.steps), outlineOf(g));
}
