// The environment and product forms' logic (docs/products.md, docs/webui.md): drafts as the
// forms hold them, the request bodies they send, the checks made before sending, and where a
// 400's field (kind, order, targets[1].namespace, patterns[2]) shows in the form.
import { ApiError } from '../api/client';
import type { Environment, EnvironmentRequest, EnvironmentTarget, Product } from '../api/products';

export const ENVIRONMENT_KINDS = ['non-prod', 'prod'] as const;
export const MAX_ORDER = 1000;
export const MAX_TARGETS = 50;
export const MAX_PATTERNS = 50;
export type TargetKey = 'runtime' | 'cluster' | 'namespace';
export const TARGET_KEYS: readonly TargetKey[] = ['runtime', 'cluster', 'namespace'];

const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export interface TargetRow {
  runtime: string;
  cluster: string;
  namespace: string;
}

export interface EnvironmentDraft {
  name: string;
  kind: string;
  /** As typed: checked on submit. */
  order: string;
  targets: TargetRow[];
}

export const emptyTarget = (): TargetRow => ({ runtime: '', cluster: '', namespace: '' });

/** A new environment's draft: promoted into from the last one (the next order after it). */
export function newEnvironmentDraft(existing: Environment[]): EnvironmentDraft {
  const last = existing.reduce((m, e) => Math.max(m, e.order), 0);
  return { name: '', kind: 'non-prod', order: String(Math.min(existing.length ? last + 1 : 1, MAX_ORDER)), targets: [emptyTarget()] };
}

/** The draft of an existing environment, for its edit form. */
export function environmentDraft(e: Environment): EnvironmentDraft {
  const targets = e.targets.map((t) => ({ runtime: t.runtime ?? '', cluster: t.cluster ?? '', namespace: t.namespace ?? '' }));
  return { name: e.name, kind: e.kind, order: String(e.order), targets: targets.length ? targets : [emptyTarget()] };
}

/** Errors the form finds before sending: by field name as the server names them. */
export type FormErrors = Record<string, string>;

/** A name as the server takes it, or why not (undefined when fine). */
export function nameError(v: string): string | undefined {
  if (!v) return 'Name is required.';
  if (!NAME_RE.test(v)) return `"${v}" is not a name: 1 to 63 lower-case letters, digits and '-', starting and ending with a letter or digit.`;
  return undefined;
}

const blankTarget = (t: TargetRow) => !t.runtime.trim() && !t.cluster.trim() && !t.namespace.trim();

/**
 * The request body of a draft, or the errors that keep it from being sent. Rows left wholly
 * empty are dropped (the row the form starts with); glob syntax is the server's to judge.
 */
export function environmentRequest(d: EnvironmentDraft): { body?: EnvironmentRequest; errors: FormErrors } {
  const errors: FormErrors = {};
  const ne = nameError(d.name);
  if (ne) errors.name = ne;
  if (!(ENVIRONMENT_KINDS as readonly string[]).includes(d.kind)) errors.kind = 'Choose prod or non-prod.';
  const order = d.order.trim();
  const n = Number(order);
  if (!/^\d+$/.test(order) || n > MAX_ORDER) errors.order = `Give a whole number from 0 to ${MAX_ORDER}: lower orders promote into higher.`;
  const targets: EnvironmentTarget[] = [];
  for (const t of d.targets) {
    if (blankTarget(t)) continue;
    const out: EnvironmentTarget = {};
    for (const k of TARGET_KEYS) if (t[k].trim()) out[k] = t[k].trim();
    targets.push(out);
  }
  if (targets.length === 0) errors.targets = 'Give at least one target: a runtime, cluster or namespace glob.';
  if (targets.length > MAX_TARGETS) errors.targets = `At most ${MAX_TARGETS} targets.`;
  if (Object.keys(errors).length) return { errors };
  return { body: { name: d.name, kind: d.kind, order: n, targets }, errors };
}

/**
 * Where the server's field names a target sent from the draft: the draft's row index (blank
 * rows were not sent, so targets[1] may be row 2) and the glob, if any. Undefined when the
 * field is not a target's.
 */
export function targetOfField(d: EnvironmentDraft, field: string | undefined): { row: number; key?: TargetKey } | undefined {
  const m = /^targets\[(\d+)\](?:\.(runtime|cluster|namespace))?$/.exec(field ?? '');
  if (!m) return undefined;
  let sent = -1;
  for (let row = 0; row < d.targets.length; row++) {
    if (blankTarget(d.targets[row])) continue;
    if (++sent === Number(m[1])) return { row, key: m[2] as TargetKey | undefined };
  }
  return undefined;
}

/** The fields of the environment form that show a server's error beside them. */
const ENV_FIELDS = ['name', 'kind', 'order', 'targets'];

/** Whether a server error is shown at a field of the environment form (else in a note below). */
export function environmentErrorPlaced(d: EnvironmentDraft, err: unknown): boolean {
  if (!(err instanceof ApiError) || !err.field) return false;
  return ENV_FIELDS.includes(err.field) || targetOfField(d, err.field) !== undefined;
}

export interface ProductDraft {
  name: string;
  /** One glob per line (commas split too). */
  patterns: string;
}

export function newProductDraft(): ProductDraft {
  return { name: '', patterns: '' };
}

export function productDraft(p: Product): ProductDraft {
  return { name: p.name, patterns: p.patterns.join('\n') };
}

/** The globs of the patterns text: one per line or comma-separated, trimmed, blanks and repeats dropped. */
export function parsePatterns(text: string): string[] {
  const out: string[] = [];
  for (const p of text.split(/[\n,]/)) {
    const g = p.trim();
    if (g && !out.includes(g)) out.push(g);
  }
  return out;
}

export function productRequest(d: ProductDraft): { body?: { name: string; patterns: string[] }; errors: FormErrors } {
  const errors: FormErrors = {};
  const ne = nameError(d.name);
  if (ne) errors.name = ne;
  const patterns = parsePatterns(d.patterns);
  if (patterns.length > MAX_PATTERNS) errors.patterns = `At most ${MAX_PATTERNS} patterns.`;
  if (Object.keys(errors).length) return { errors };
  return { body: { name: d.name, patterns }, errors };
}

/**
 * A server error about the patterns (patterns, patterns[2]) for the patterns field; the
 * server's message names the field and the glob (patterns[1]: "[x" is not a glob: …).
 */
export function patternsError(err: unknown): string | undefined {
  return err instanceof ApiError && /^patterns(\[\d+\])?$/.test(err.field ?? '') ? err.message : undefined;
}
