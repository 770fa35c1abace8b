// The pipeline editor's form: spec and settings as the inputs hold them, to and from the API.
import { MASKED, type Pipeline, type PipelineConfig } from '../api/types';
import { isBlank, mapFromRows, rowsFromMap, validateRows, type KVRow } from './kv';

export interface PipelineForm {
  spec: string;
  contexts: string[];
  variables: KVRow[];
  runnerLabels: KVRow[];
  concurrency: string;
  branchConcurrency: string;
  maxAttempts: string;
  terminateOlder: boolean;
  onLeaseExpiry: '' | 'requeue' | 'fail';
}

export type FormErrors = Partial<Record<'concurrency' | 'branchConcurrency' | 'maxAttempts' | 'variables' | 'spec', string>> & {
  variableRows?: (string | undefined)[];
  labelRows?: (string | undefined)[];
};

export const NEW_SPEC = `version: '1.0'
stages: [build, test]
steps:
  build:
    title: Build
    stage: build
    image: alpine:3.20
    commands:
      - echo "Building \${{CF_BRANCH}} at \${{CF_SHORT_REVISION}}"
  test:
    title: Test
    stage: test
    image: alpine:3.20
    commands:
      - echo "All tests pass"
`;

const blankRow = (): KVRow => ({ key: '', value: '' });

export function emptyForm(spec = NEW_SPEC): PipelineForm {
  return { spec, contexts: [], variables: [blankRow()], runnerLabels: [blankRow()], concurrency: '0', branchConcurrency: '0', maxAttempts: '0', terminateOlder: false, onLeaseExpiry: '' };
}

export function formFromPipeline(p: Pipeline): PipelineForm {
  const c = p.config ?? {};
  const vars = (c.variables ?? []).map((v) => ({ key: v.key, value: v.value, encrypted: !!v.encrypted }));
  const labels = rowsFromMap(c.runnerLabels);
  return {
    spec: p.spec,
    contexts: c.contexts ?? [],
    variables: vars.length ? vars : [blankRow()],
    runnerLabels: labels.length ? labels : [blankRow()],
    concurrency: String(c.concurrency ?? 0),
    branchConcurrency: String(c.branchConcurrency ?? 0),
    maxAttempts: String(c.maxAttempts ?? 0),
    terminateOlder: !!c.terminateOlder,
    onLeaseExpiry: c.onLeaseExpiry ?? '',
  };
}

function intIn(v: string, min: number, max: number): number | undefined {
  const t = v.trim();
  if (!/^\d+$/.test(t)) return undefined;
  const n = Number(t);
  return n >= min && n <= max ? n : undefined;
}

/**
 * Checks the form like the server will. An encrypted variable sent back with the mask the API
 * answers with keeps its stored value — but only a variable that was stored encrypted under the
 * same key: a new or renamed one holding the mask must be given its value.
 */
export function validateForm(f: PipelineForm, original?: PipelineForm): FormErrors {
  const e: FormErrors = {};
  if (!f.spec.trim()) e.spec = "The spec is empty: write the pipeline's codefresh.yml.";
  if (intIn(f.concurrency || '0', 0, 1_000_000) === undefined) e.concurrency = `"${f.concurrency}" is not a number of builds: 0 (unlimited) or more.`;
  if (intIn(f.branchConcurrency || '0', 0, 1_000_000) === undefined) e.branchConcurrency = `"${f.branchConcurrency}" is not a number of builds: 0 (unlimited) or more.`;
  if (intIn(f.maxAttempts || '0', 0, 10) === undefined) e.maxAttempts = `"${f.maxAttempts}" is out of range: 1 to 10, or 0 for the default (2).`;
  const rows = validateRows(f.variables, 'variable');
  f.variables.forEach((r, i) => {
    if (!rows[i] && r.encrypted && r.value === MASKED) {
      const was = original?.variables.find((o) => o.key === r.key.trim() && o.encrypted);
      if (!was) rows[i] = `Type the value of ${r.key}: "${MASKED}" is the mask of a stored value, and ${r.key} has none stored encrypted.`;
    }
  });
  if (rows.some(Boolean)) e.variableRows = rows;
  const labels = validateRows(f.runnerLabels, 'label');
  if (labels.some(Boolean)) e.labelRows = labels;
  return e;
}

export function hasFormErrors(e: FormErrors): boolean {
  return Object.values(e).some((v) => (Array.isArray(v) ? v.some(Boolean) : !!v));
}

export function configFromForm(f: PipelineForm): PipelineConfig {
  const cfg: PipelineConfig = {};
  if (f.contexts.length) cfg.contexts = f.contexts;
  const vars = f.variables.filter((r) => !isBlank(r)).map((r) => ({ key: r.key.trim(), value: r.value, ...(r.encrypted ? { encrypted: true } : {}) }));
  if (vars.length) cfg.variables = vars;
  const labels = mapFromRows(f.runnerLabels);
  if (Object.keys(labels).length) cfg.runnerLabels = labels;
  const n = (s: string) => Number(s.trim() || '0');
  if (n(f.concurrency)) cfg.concurrency = n(f.concurrency);
  if (n(f.branchConcurrency)) cfg.branchConcurrency = n(f.branchConcurrency);
  if (n(f.maxAttempts)) cfg.maxAttempts = n(f.maxAttempts);
  if (f.terminateOlder) cfg.terminateOlder = true;
  if (f.onLeaseExpiry) cfg.onLeaseExpiry = f.onLeaseExpiry;
  return cfg;
}

/** Whether the form differs from what was loaded (blank rows do not count). */
export function isDirty(f: PipelineForm, original: PipelineForm): boolean {
  return f.spec !== original.spec || JSON.stringify(configFromForm(f)) !== JSON.stringify(configFromForm(original));
}
