// One pipeline: its spec in an editor that lints as you type, its settings, triggers and
// builds; and the form that creates a new one (/pipelines/new).
import { Suspense, lazy, useEffect, useId, useMemo, useRef, useState, type FormEvent } from 'react';
import { ApiError, errorMessage, fieldError } from '../api/client';
import { builds, contexts as contextsApi, pipelines, projects } from '../api/ci';
import type { Pipeline as PipelineT } from '../api/types';
import { Link, href, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { BuildTable } from '../components/BuildTable';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Field } from '../components/Field';
import { KeyValueRows } from '../components/KeyValueRows';
import { RunDialog } from '../components/RunDialog';
import { SpecGraph } from '../components/SpecGraph';
import { EmptyState, ErrorNote, ErrorState, Flash, LoadingRows, Spinner } from '../components/States';
import { Tabs } from '../components/Tabs';
import { YamlEditor, type YamlEditorHandle } from '../components/YamlEditor';
import { isActive } from '../lib/builds';
import { formatTime, relativeTime } from '../lib/format';
import { countLines, describeIssue, marksByLine, sortIssues, summarize, type LintIssue } from '../lib/lint';
import { configFromForm, emptyForm, formFromPipeline, hasFormErrors, isDirty, validateForm, type FormErrors, type PipelineForm } from '../lib/pipelineForm';
import { pipelinePath, resourceNameError } from '../lib/pipelineRefs';
import { useLint } from '../lib/useLint';
import { useNow } from '../lib/useNow';
import { useResource } from '../lib/useResource';
import { TriggersPanel } from './PipelineTriggers';

// Loaded with visx on the Builds tab only.
const BuildTrends = lazy(() => import('../components/BuildTrends'));

type Tab = 'spec' | 'settings' | 'triggers' | 'builds';
const TABS: { id: Tab; label: string }[] = [
  { id: 'spec', label: 'Spec' },
  { id: 'settings', label: 'Settings' },
  { id: 'triggers', label: 'Triggers' },
  { id: 'builds', label: 'Builds' },
];

function useTab(allowed: Tab[]): [Tab, (t: Tab) => void] {
  const { search, pathname } = useLocation();
  const p = new URLSearchParams(search);
  const t = p.get('tab') as Tab | null;
  const tab = t && allowed.includes(t) ? t : 'spec';
  const set = (next: Tab) => {
    const q = Object.fromEntries(new URLSearchParams(window.location.search));
    navigate(href(pathname, { ...q, tab: next === 'spec' ? undefined : next }), { replace: true });
  };
  return [tab, set];
}

/** Warns before the tab closes with unsaved changes. */
function useLeaveGuard(dirty: boolean) {
  useEffect(() => {
    if (!dirty) return;
    const h = (e: BeforeUnloadEvent) => {
      e.preventDefault();
      e.returnValue = '';
    };
    window.addEventListener('beforeunload', h);
    return () => window.removeEventListener('beforeunload', h);
  }, [dirty]);
}


/** /pipelines/:project/:name */
export default function Pipeline({ params }: { params: Record<string, string> }) {
  const ref = `${params.project}/${params.name}`;
  const res = useResource((signal) => pipelines.get(ref, signal), [ref]);
  const p = res.data && res.data.project === params.project && res.data.name === params.name ? res.data : undefined;
  if (res.error !== undefined && !p) {
    return (
      <div data-page="pipeline">
        <p className="breadcrumbs small">
          <Link to="/pipelines">Pipelines</Link>
        </p>
        <ErrorState error={res.error} onRetry={res.reload} />
      </div>
    );
  }
  if (!p) {
    return (
      <div data-page="pipeline" aria-busy="true">
        <LoadingRows rows={8} label="Loading pipeline" />
      </div>
    );
  }
  return <PipelineView key={p.id} pipeline={p} onSaved={() => res.reload({ quiet: true })} />;
}

function PipelineView({ pipeline: p, onSaved }: { pipeline: PipelineT; onSaved: () => void }) {
  const me = useMe();
  const canEdit = me.role !== 'viewer';
  const [tab, setTab] = useTab(['spec', 'settings', 'triggers', 'builds']);
  const original = useMemo(() => formFromPipeline(p), [p]);
  const [form, setForm] = useState<PipelineForm>(original);
  const [errors, setErrors] = useState<FormErrors>({});
  const [saveError, setSaveError] = useState<unknown>();
  const [saving, setSaving] = useState(false);
  const [done, setDone] = useState<string>();
  const [running, setRunning] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const dirty = isDirty(form, original);
  useLeaveGuard(dirty);

  const save = async () => {
    const errs = validateForm(form, original);
    setErrors(errs);
    setSaveError(undefined);
    if (hasFormErrors(errs)) {
      if (errs.spec) setTab('spec');
      else setTab('settings');
      return;
    }
    setSaving(true);
    try {
      await pipelines.update(p.id, { spec: form.spec, config: configFromForm(form) });
      setDone('Saved.');
      onSaved();
    } catch (e) {
      setSaveError(e);
      if (e instanceof ApiError && e.field && e.field !== 'spec') setTab('settings');
    } finally {
      setSaving(false);
    }
  };

  const specDirty = form.spec !== original.spec;
  const settingsDirty = JSON.stringify(configFromForm(form)) !== JSON.stringify(configFromForm(original));

  return (
    <div data-page="pipeline">
      <p className="breadcrumbs small">
        <Link to="/pipelines">Pipelines</Link> / <Link to={href('/pipelines', { project: p.project })}>{p.project}</Link>
      </p>
      <div className="page-header">
        <div>
          <h1>{p.name}</h1>
          <p className="muted page-description">
            <code>{p.fullName}</code> · created {relativeTime(p.createdAt)} · updated <span title={formatTime(p.updatedAt)}>{relativeTime(p.updatedAt)}</span>
          </p>
        </div>
        <div className="page-actions">
          {canEdit && (
            <button type="button" className="button button-danger-quiet" onClick={() => setDeleting(true)}>
              Delete
            </button>
          )}
          {canEdit && (tab === 'spec' || tab === 'settings') && (
            <button type="button" className="button" onClick={save} disabled={saving || !dirty} data-testid="save-pipeline">
              {saving ? 'Saving…' : dirty ? 'Save changes' : 'Saved'}
            </button>
          )}
          <button type="button" className="button button-primary" onClick={() => setRunning(true)} disabled={!canEdit} title={dirty ? 'Runs the saved version' : undefined}>
            Run
          </button>
        </div>
      </div>
      <Flash text={done} onDone={() => setDone(undefined)} ms={3000} />
      {saveError !== undefined && <ErrorNote error={saveError} />}
      <Tabs label="Pipeline sections" tab={tab} onChange={setTab} tabs={TABS} dirty={[...(specDirty ? ['spec' as const] : []), ...(settingsDirty ? ['settings' as const] : [])]} />
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="tab-panel">
        {tab === 'spec' && <SpecEditor spec={form.spec} onChange={(spec) => setForm({ ...form, spec })} readOnly={!canEdit} error={errors.spec} />}
        {tab === 'settings' && <SettingsForm form={form} onChange={setForm} errors={errors} serverError={saveError} readOnly={!canEdit} />}
        {tab === 'triggers' && <TriggersPanel pipeline={p} canEdit={canEdit} />}
        {tab === 'builds' && <RecentBuilds pipeline={p} />}
      </div>
      {running && <RunDialog open pipeline={p} onClose={() => setRunning(false)} />}
      <ConfirmDialog
        open={deleting}
        title="Delete pipeline"
        confirmLabel="Delete pipeline"
        danger
        onClose={() => setDeleting(false)}
        onConfirm={async () => {
          await pipelines.remove(p.id);
          navigate(href('/pipelines', { project: p.project }), { replace: true });
        }}
      >
        <p>
          Delete <strong>{p.fullName}</strong> with its triggers and all its builds and logs? This cannot be undone.
        </p>
      </ConfirmDialog>
    </div>
  );
}

/** /pipelines/new?project= */
export function PipelineNew() {
  const me = useMe();
  const { search } = useLocation();
  const [tab, setTab] = useTab(['spec', 'settings']);
  const projs = useResource((signal) => projects.list({ limit: 1000 }, signal), []);
  const [project, setProject] = useState(() => new URLSearchParams(search).get('project') ?? '');
  const [name, setName] = useState('');
  const [form, setForm] = useState<PipelineForm>(() => emptyForm());
  const [errors, setErrors] = useState<FormErrors & { name?: string; project?: string }>({});
  const [saveError, setSaveError] = useState<unknown>();
  const [saving, setSaving] = useState(false);
  const blank = useMemo(() => emptyForm(), []);
  useLeaveGuard(isDirty(form, blank) || !!name);

  useEffect(() => {
    if (!project && projs.data?.items.length) setProject(projs.data.items[0].name);
  }, [projs.data, project]);

  const create = async (e?: FormEvent) => {
    e?.preventDefault();
    const errs = { ...validateForm(form), name: resourceNameError(name, 'Name'), project: project ? undefined : 'Choose a project.' };
    setErrors(errs);
    setSaveError(undefined);
    if (hasFormErrors(errs)) {
      if (errs.spec || errs.name || errs.project) setTab('spec');
      else setTab('settings');
      return;
    }
    setSaving(true);
    try {
      const p = await pipelines.create({ project, name, spec: form.spec, config: configFromForm(form) });
      setForm(blank); // nothing unsaved any more
      setName('');
      navigate(pipelinePath(p), { replace: true });
    } catch (err) {
      setSaveError(err);
    } finally {
      setSaving(false);
    }
  };

  if (me.role === 'viewer') {
    return (
      <div data-page="pipeline-new">
        <EmptyState title="Viewers cannot create pipelines">Ask an admin of {me.account.name} for the member role.</EmptyState>
      </div>
    );
  }

  return (
    <div data-page="pipeline-new">
      <p className="breadcrumbs small">
        <Link to="/pipelines">Pipelines</Link>
      </p>
      <div className="page-header">
        <div>
          <h1>New pipeline</h1>
          <p className="muted page-description">Write the steps in codefresh.yml form; problems show at their line as you type.</p>
        </div>
        <div className="page-actions">
          <Link to={href('/pipelines', { project: project || undefined })} className="button">
            Cancel
          </Link>
          <button type="submit" form="new-pipeline" className="button button-primary" disabled={saving}>
            {saving ? 'Creating…' : 'Create pipeline'}
          </button>
        </div>
      </div>
      <form id="new-pipeline" className="form-row" onSubmit={create} noValidate>
        <Field label="Project" error={errors.project ?? fieldError(saveError, 'project')}>
          <select name="project" value={project} onChange={(e) => setProject(e.target.value)} disabled={!projs.data}>
            {!projs.data && <option value="">Loading…</option>}
            {projs.data?.items.length === 0 && <option value="">No projects: create one first</option>}
            {projs.data?.items.map((pr) => (
              <option key={pr.id} value={pr.name}>
                {pr.name}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Name" hint="Letters, digits, '.', '_' or '-'." error={errors.name ?? fieldError(saveError, 'name')}>
          <input type="text" name="name" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
      </form>
      {saveError !== undefined && !fieldError(saveError, 'name') && !fieldError(saveError, 'project') && <ErrorNote error={saveError} />}
      <Tabs label="Pipeline sections" tab={tab} onChange={setTab} tabs={TABS.slice(0, 2)} />
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="tab-panel">
        {tab === 'spec' && <SpecEditor spec={form.spec} onChange={(spec) => setForm({ ...form, spec })} error={errors.spec} />}
        {tab === 'settings' && <SettingsForm form={form} onChange={setForm} errors={errors} serverError={saveError} />}
      </div>
    </div>
  );
}

function SpecEditor({ spec, onChange, readOnly, error }: { spec: string; onChange: (s: string) => void; readOnly?: boolean; error?: string }) {
  const lint = useLint(spec);
  const editor = useRef<YamlEditorHandle>(null);
  const [cursor, setCursor] = useState({ line: 1, column: 1 });
  const listId = useId();
  const lines = countLines(spec);
  const marks = useMemo(() => marksByLine(lint.issues, lines), [lint.issues, lines]);
  const sorted = useMemo(() => sortIssues(lint.issues), [lint.issues]);
  const stale = lint.checked !== spec;
  const errors = lint.issues.filter((i) => i.severity === 'error').length;
  return (
    <div className="spec spec-wide">
      <div className="spec-main">
        <YamlEditor ref={editor} value={spec} onChange={onChange} marks={marks} label="Pipeline spec (codefresh.yml)" readOnly={readOnly} describedBy={listId} height="min(62vh, 620px)" onCursor={(line, column) => setCursor({ line, column })} />
        <div className="editor-status small">
          <span className="tabular">
            Ln {cursor.line}, Col {cursor.column}
          </span>
          <span aria-live="polite" data-testid="lint-summary" data-state={lint.checking || stale ? 'checking' : errors ? 'errors' : 'ok'}>
            {lint.checking || stale ? (
              <>
                <Spinner label="Checking" /> Checking…
              </>
            ) : lint.error !== undefined ? (
              <span className="text-danger">Could not check: {errorMessage(lint.error)}</span>
            ) : (
              <span className={errors ? 'text-danger' : lint.issues.length ? 'text-warning' : 'text-success'}>{summarize(lint.issues)}</span>
            )}
          </span>
          {readOnly ? <span className="muted">Read only: viewers cannot change pipelines</span> : <span className="muted">Tab indents · Esc then Tab leaves the editor</span>}
        </div>
        {error && <div className="field-error">{error}</div>}
      </div>
      <div className="spec-side">
        <SpecGraph spec={spec} onJump={(line, column) => editor.current?.jumpTo(line, column ?? 1)} />
        <aside className="spec-issues" aria-label="Problems">
          <h2 className="spec-issues-title">
            Problems <span className="muted small">{lint.issues.length ? `(${lint.issues.length})` : ''}</span>
          </h2>
          <ul id={listId} className={stale ? 'issues issues-stale' : 'issues'} data-testid="lint-issues">
            {sorted.length === 0 ? (
              <li className="muted small issues-none">{lint.checked === undefined ? 'Not checked yet.' : 'No problems found.'}</li>
            ) : (
              sorted.map((i, k) => <IssueItem key={k} issue={i} onJump={() => editor.current?.jumpTo(i.line || 1, i.column || 1)} />)
            )}
          </ul>
          <p className="muted small">
            The codefresh.yml dialect is described in <code>docs/pipelines-spec.md</code> of the Freshet repository.
          </p>
        </aside>
      </div>
    </div>
  );
}

function IssueItem({ issue, onJump }: { issue: LintIssue; onJump: () => void }) {
  return (
    <li>
      <button type="button" className={`issue issue-${issue.severity}`} onClick={onJump} data-line={issue.line}>
        <span className="issue-sev" aria-hidden="true">
          {issue.severity === 'error' ? '✕' : '!'}
        </span>
        <span>
          <span className="visually-hidden">{issue.severity}: </span>
          <span className="issue-where">{issue.line > 0 ? `Line ${issue.line}${issue.column ? `:${issue.column}` : ''}` : 'Spec'}</span>
          {issue.field && <code className="issue-field">{issue.field}</code>}
          <span className="issue-msg">{issue.message}</span>
        </span>
      </button>
      <span className="visually-hidden">{describeIssue(issue)}</span>
    </li>
  );
}

function SettingsForm({ form, onChange, errors, serverError, readOnly }: { form: PipelineForm; onChange: (f: PipelineForm) => void; errors: FormErrors; serverError?: unknown; readOnly?: boolean }) {
  const ctxs = useResource((signal) => contextsApi.list(signal), []);
  const set = <K extends keyof PipelineForm>(k: K, v: PipelineForm[K]) => onChange({ ...form, [k]: v });
  // The server names settings by their path in the request (config.concurrency, config.variables[0].key).
  const serverFieldError = (f: string) =>
    serverError instanceof ApiError && serverError.field?.replace(/^config\./, '').startsWith(f) ? serverError.message : undefined;
  const known = new Set(ctxs.data?.items.map((c) => c.name));
  const missing = form.contexts.filter((c) => ctxs.data && !known.has(c));
  return (
    <fieldset className="settings-form" disabled={readOnly}>
      <legend className="visually-hidden">Pipeline settings</legend>
      <section className="panel" aria-labelledby="set-contexts">
        <h2 id="set-contexts">Contexts</h2>
        <p className="muted small">Shared configuration and secrets whose values become the build's variables.</p>
        {ctxs.error !== undefined ? (
          <ErrorNote error={ctxs.error} />
        ) : !ctxs.data ? (
          <LoadingRows rows={2} label="Loading contexts" />
        ) : ctxs.data.items.length === 0 && missing.length === 0 ? (
          <p className="muted">
            No contexts yet. <Link to="/settings/contexts">Create one in Settings → Contexts</Link>.
          </p>
        ) : (
          <div className="check-grid">
            {[...ctxs.data.items.map((c) => ({ name: c.name, type: c.type as string })), ...missing.map((name) => ({ name, type: 'missing' }))].map((c) => (
              <label key={c.name} className="check">
                <input type="checkbox" checked={form.contexts.includes(c.name)} onChange={(e) => set('contexts', e.target.checked ? [...form.contexts, c.name] : form.contexts.filter((x) => x !== c.name))} />
                <span>{c.name}</span> <Badge tone={c.type === 'secret' ? 'warning' : c.type === 'missing' ? 'danger' : 'neutral'}>{c.type}</Badge>
              </label>
            ))}
          </div>
        )}
        {serverFieldError('contexts') && <div className="field-error">{serverFieldError('contexts')}</div>}
      </section>
      <section className="panel">
        <KeyValueRows
          label="Variables"
          rows={form.variables}
          onChange={(rows) => set('variables', rows)}
          errors={errors.variableRows}
          encryptable
          hint="Set in every build of this pipeline; a run or trigger can override them. Encrypted values are stored encrypted and shown masked."
        />
        {serverFieldError('variables') && <div className="field-error">{serverFieldError('variables')}</div>}
      </section>
      <section className="panel" aria-labelledby="set-conc">
        <h2 id="set-conc">Concurrency and retries</h2>
        <div className="form-row">
          <Field label="Builds at once" hint="0 for no limit." error={errors.concurrency ?? serverFieldError('concurrency')}>
            <input type="number" min={0} inputMode="numeric" value={form.concurrency} onChange={(e) => set('concurrency', e.target.value)} />
          </Field>
          <Field label="Builds at once per branch" hint="0 for no limit." error={errors.branchConcurrency ?? serverFieldError('branchConcurrency')}>
            <input type="number" min={0} inputMode="numeric" value={form.branchConcurrency} onChange={(e) => set('branchConcurrency', e.target.value)} />
          </Field>
          <Field label="Attempts when a runner is lost" hint="1–10; 0 for the default (2)." error={errors.maxAttempts ?? serverFieldError('maxAttempts')}>
            <input type="number" min={0} max={10} inputMode="numeric" value={form.maxAttempts} onChange={(e) => set('maxAttempts', e.target.value)} />
          </Field>
          <Field label="When a runner's lease expires" error={serverFieldError('onLeaseExpiry')}>
            <select value={form.onLeaseExpiry} onChange={(e) => set('onLeaseExpiry', e.target.value as PipelineForm['onLeaseExpiry'])}>
              <option value="">Default (queue again)</option>
              <option value="requeue">Queue the build again</option>
              <option value="fail">Fail the build</option>
            </select>
          </Field>
        </div>
        <label className="check">
          <input type="checkbox" checked={form.terminateOlder} onChange={(e) => set('terminateOlder', e.target.checked)} /> Terminate older builds of the same branch when a new one starts
        </label>
      </section>
      <section className="panel">
        <KeyValueRows
          label="Runner labels"
          rows={form.runnerLabels}
          onChange={(rows) => set('runnerLabels', rows)}
          errors={errors.labelRows}
          keyPlaceholder="label"
          addLabel="Add label"
          hint="Only runners with all these labels take this pipeline's builds."
        />
      </section>
    </fieldset>
  );
}

function RecentBuilds({ pipeline }: { pipeline: PipelineT }) {
  const list = useResource((signal) => builds.list({ pipeline: pipeline.id, limit: 10 }, signal), [pipeline.id]);
  const items = list.data?.items ?? [];
  const active = items.some((b) => isActive(b.status));
  const now = useNow(active);
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => list.reload({ quiet: true }), 3000);
    return () => clearInterval(t);
  }, [active, list.reload]);
  return (
    <div>
      <div className="section-row">
        <h2 className="visually-hidden">Recent builds</h2>
        <span className="muted small">The last 10 builds.</span>
        <Link to={href('/builds', { pipeline: pipeline.fullName })} className="small">
          All builds of this pipeline →
        </Link>
      </div>
      <BuildTable list={list} now={now} compact placeholder={{ label: 'Loading builds', rows: 4 }} empty={{ title: 'No builds yet', body: 'Run the pipeline, or add a trigger.' }} />
      <h3 className="section-title">Trends</h3>
      <Suspense fallback={<div className="chart-placeholder skeleton-row" role="status" aria-label="Loading build trends" />}>
        <BuildTrends pipeline={pipeline.id} charts={['success', 'duration']} />
      </Suspense>
    </div>
  );
}
