// Delivery Pipelines (docs/web.md, docs/runtimes.md "Delivery Pipelines"): on every hybrid
// runtime, each Sensor with the WorkflowTemplate its trigger submits and its last run; a
// pipeline's runs, live from the runtime and archived by the control plane, filtered by phase;
// and the wizard that commits a new pipeline to a Git Source.
import { useState, type FormEvent } from 'react';
import { errorMessage } from '../api/client';
import { runtimeProxy } from '../api/gitops';
import { hub } from '../api/hub';
import { runtimes } from '../api/rest';
import { workflowsApi, type ArchivedWorkflow, type DeliveryPipelineCommit } from '../api/workflows';
import { href, Link, navigate, useSearchParams } from '../app/router';
import { Badge } from '../components/Badge';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { pipelinesOf, runsOf, PHASES, type DeliveryPipeline, type PipelineRun } from '../lib/deliveryPipelines';
import { formatTime, relativeTime } from '../lib/format';
import { EVENT_TYPES, validateWizard, wizardRequest, type EventType, type WizardForm } from '../lib/pipelineWizard';
import { defaultRuntime, reachable, unreachableNote } from '../lib/runtimes';
import { useResource } from '../lib/useResource';
import { phaseTone } from '../lib/workflowGraph';

const seg = encodeURIComponent;

export function PhaseBadge({ phase }: { phase: string }) {
  return <Badge tone={phaseTone(phase)}>{phase || 'Unknown'}</Badge>;
}

/** Loads the archived runs, or none when the archive cannot be read (the live runs still show). */
const archivedOrNone = (q: Parameters<typeof workflowsApi.archived>[0], signal: AbortSignal): Promise<ArchivedWorkflow[]> =>
  workflowsApi.archived({ ...q, limit: 200 }, signal).then(
    (p) => p.items,
    () => [],
  );

async function loadPipelines(signal: AbortSignal): Promise<{ pipelines: DeliveryPipeline[]; problems: string[]; hybrid: number }> {
  const rts = (await runtimes.list(signal)).items.filter((r) => r.type === 'hybrid');
  const archived = await archivedOrNone({}, signal);
  const problems: string[] = [];
  const per = await Promise.all(
    rts.map(async (r) => {
      // A disconnected runtime cannot answer through its tunnel: say so instead of asking it.
      if (!reachable(r)) {
        problems.push(`${r.name}: the runtime is ${r.status}; its Delivery Pipelines show when it connects`);
        return [];
      }
      try {
        const [s, e, w] = await Promise.all([workflowsApi.sensors(r.name, signal), workflowsApi.eventSources(r.name, signal), workflowsApi.list(r.name, signal)]);
        return pipelinesOf(r.name, s.items, e.items, w.items, archived);
      } catch (err) {
        problems.push(`${r.name}: ${errorMessage(err)}`);
        return [];
      }
    }),
  );
  return { pipelines: per.flat(), problems, hybrid: rts.length };
}

export default function DeliveryPipelines() {
  const list = useResource((signal) => loadPipelines(signal), []);
  const now = Date.now();
  return (
    <div data-page="delivery-pipelines">
      <PageHeader
        title="Delivery Pipelines"
        actions={
          <>
            <Link to="/delivery-pipelines/cron-workflows" className="button">
              CronWorkflows
            </Link>
            <Link to="/delivery-pipelines/new" className="button button-primary">
              New Delivery Pipeline
            </Link>
          </>
        }
      >
        A Sensor and the WorkflowTemplate its trigger submits, on a hybrid runtime.
      </PageHeader>
      {list.error ? (
        <ErrorState error={list.error} onRetry={list.reload} />
      ) : !list.data ? (
        <LoadingRows />
      ) : (
        <>
          {list.data.problems.map((p) => (
            <p key={p} className="error-note" role="alert">
              {p}
            </p>
          ))}
          {list.data.pipelines.length === 0 ? (
            <EmptyState
              title="No Delivery Pipelines yet"
              action={
                <Link to="/delivery-pipelines/new" className="button">
                  Create one
                </Link>
              }
            >
              {list.data.hybrid === 0 ? 'Delivery Pipelines run on hybrid runtimes: install one first.' : 'Commit a Sensor and a WorkflowTemplate to a Git Source with the wizard.'}
            </EmptyState>
          ) : (
            <div className="table-scroll">
              <table className="table" aria-label="Delivery Pipelines">
                <thead>
                  <tr>
                    <th>Name</th>
                    <th>Runtime</th>
                    <th>Trigger</th>
                    <th>Template</th>
                    <th>Last run</th>
                  </tr>
                </thead>
                <tbody>
                  {list.data.pipelines.map((p) => (
                    <tr key={`${p.runtime}/${p.namespace}/${p.name}`} data-testid={`pipeline-${p.name}`}>
                      <td>
                        <Link to={`/delivery-pipelines/${seg(p.runtime)}/${seg(p.namespace)}/${seg(p.name)}`} className="strong">
                          {p.name}
                        </Link>
                        <div className="muted small">{p.namespace}</div>
                        {p.problem && <div className="field-error">{p.problem}</div>}
                      </td>
                      <td>{p.runtime}</td>
                      <td>{p.triggers.join(', ') || <span className="muted">none</span>}</td>
                      <td>{p.template ? <code>{p.template}</code> : <span className="muted">inline</span>}</td>
                      <td>
                        {p.lastRun ? (
                          <>
                            <PhaseBadge phase={p.lastRun.phase} />{' '}
                            <span className="muted small" title={formatTime(p.lastRun.startedAt ?? undefined)}>
                              {relativeTime(p.lastRun.startedAt ?? undefined, now)}
                            </span>
                          </>
                        ) : (
                          <span className="muted">never run</span>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </div>
  );
}

export function runHref(runtime: string, r: { namespace: string; name: string; archiveId?: string; live: boolean }): string {
  return r.live || !r.archiveId ? `/workflows/${seg(runtime)}/${seg(r.namespace)}/${seg(r.name)}` : `/archived-workflows/${seg(r.archiveId)}`;
}

export function DeliveryPipelinePage({ params }: { params: Record<string, string> }) {
  const { runtime, namespace, name } = params;
  const phase = useSearchParams().get('phase') ?? '';
  const data = useResource(
    async (signal) => {
      const [s, w, a] = await Promise.all([
        workflowsApi.sensors(runtime, signal),
        workflowsApi.list(runtime, signal),
        archivedOrNone({ runtime, namespace }, signal),
      ]);
      const sensor = s.items.find((x) => x.name === name && x.namespace === namespace);
      return { sensor, runs: runsOf({ name, namespace }, w.items, a, runtime) };
    },
    [runtime, namespace, name],
  );
  const runs: PipelineRun[] = (data.data?.runs ?? []).filter((r) => !phase || r.phase === phase);
  const now = Date.now();
  const t = data.data?.sensor?.triggers?.[0];
  return (
    <div data-page="delivery-pipeline">
      <PageHeader title={name}>
        Delivery Pipeline on <Link to={`/runtimes/${seg(runtime)}`}>{runtime}</Link> · namespace {namespace}
        {t?.workflowTemplate && (
          <>
            {' '}
            · runs <code>{t.workflowTemplate}</code>
          </>
        )}
      </PageHeader>
      {data.error ? (
        <ErrorState error={data.error} onRetry={data.reload} />
      ) : !data.data ? (
        <LoadingRows />
      ) : (
        <>
          {!data.data.sensor && <p className="error-note">The runtime has no Sensor {name} in {namespace} (any more): its archived runs are shown.</p>}
          <div className="filters">
            <Field label="Phase">
              <select value={phase} onChange={(e) => navigate(href(`/delivery-pipelines/${seg(runtime)}/${seg(namespace)}/${seg(name)}`, { phase: e.target.value || undefined }), { replace: true })}>
                <option value="">Any</option>
                {PHASES.map((p) => (
                  <option key={p} value={p}>
                    {p}
                  </option>
                ))}
              </select>
            </Field>
          </div>
          {runs.length === 0 ? (
            <EmptyState title={phase ? `No ${phase} runs` : 'No runs yet'}>The pipeline runs when its event comes.</EmptyState>
          ) : (
            <RunsTable runtime={runtime} runs={runs} now={now} />
          )}
        </>
      )}
    </div>
  );
}

const emptyForm: WizardForm = {
  runtime: '',
  gitSource: '',
  name: '',
  eventType: 'webhook',
  endpoint: '',
  schedule: '',
  owner: '',
  repository: '',
  secretName: '',
  secretKey: '',
  templateFrom: 'hub',
  template: '',
  templateManifest: '',
  namespace: '',
  parameters: [],
};

export function NewDeliveryPipeline() {
  const [f, setF] = useState<WizardForm>(emptyForm);
  const set = <K extends keyof WizardForm>(k: K, v: WizardForm[K]) => setF((o) => ({ ...o, [k]: v }));
  const rts = useResource((signal) => runtimes.list(signal), []);
  const hybrid = (rts.data?.items ?? []).filter((r) => r.type === 'hybrid');
  const chosen = defaultRuntime(hybrid, f.runtime);
  const rt = chosen?.name ?? '';
  // A disconnected runtime is not asked (its tunnel answers 502): the form says so instead.
  const ask = chosen !== undefined && reachable(chosen);
  const sources = useResource((signal) => (ask ? runtimeProxy.gitSources(rt, signal) : Promise.resolve({ items: [] })), [rt, ask]);
  const gs = f.gitSource || sources.data?.items[0]?.metadata.name || '';
  const catalogue = useResource((signal) => hub.list(signal), []);
  const existing = useResource((signal) => (ask ? workflowsApi.templates(rt, signal) : Promise.resolve({ items: [] })), [rt, ask]);
  const hubTemplate = useResource(
    (signal) => (f.templateFrom === 'hub' && f.template ? hub.get(f.template, undefined, signal) : Promise.resolve(undefined)),
    [f.templateFrom, f.template],
  );
  const form: WizardForm = { ...f, runtime: rt, gitSource: gs, templateManifest: f.templateFrom === 'hub' ? (hubTemplate.data?.manifest ?? '') : '' };
  const [tried, setTried] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const [done, setDone] = useState<DeliveryPipelineCommit>();
  const errors = tried ? validateWizard(form) : {};
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setTried(true);
    if (Object.keys(validateWizard(form)).length) return;
    setBusy(true);
    setError('');
    try {
      setDone(await workflowsApi.commitPipeline(rt, gs, wizardRequest(form)));
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  const params = f.templateFrom === 'hub' ? (hubTemplate.data?.parameters ?? []).map((p) => p.name) : ((existing.data?.items ?? []).find((t) => t.name === f.template)?.parameters ?? []).map((p) => p.name);
  const paramValue = (n: string) => f.parameters.find((p) => p.name === n)?.value ?? '';
  const setParam = (n: string, v: string) => set('parameters', [...f.parameters.filter((p) => p.name !== n), ...(v ? [{ name: n, value: v }] : [])]);
  if (done)
    return (
      <div data-page="delivery-pipeline-new">
        <PageHeader title="Delivery Pipeline committed" />
        <div className="card" data-testid="pipeline-committed">
          <p>
            <strong>{done.name}</strong> was committed to Git Source <strong>{done.gitSource}</strong> ({done.branch}) as <code>{done.commit.slice(0, 12)}</code>:
          </p>
          <ul>
            {(done.files ?? []).map((x) => (
              <li key={x}>
                <code>{x}</code>
              </li>
            ))}
          </ul>
          <p className="muted">
            Application <strong>{done.application}</strong> {done.applicationCreated ? '(created by this commit)' : ''} deploys it to namespace {done.namespace}.
          </p>
          <Link to="/delivery-pipelines" className="button">
            Back to Delivery Pipelines
          </Link>
        </div>
      </div>
    );
  const git = f.eventType !== 'webhook' && f.eventType !== 'calendar';
  return (
    <div data-page="delivery-pipeline-new">
      <PageHeader title="New Delivery Pipeline">Commits an EventSource, a Sensor and (from the Hub) a WorkflowTemplate to a Git Source, in one commit.</PageHeader>
      <form className="card wizard" onSubmit={submit} noValidate aria-label="New Delivery Pipeline">
        <fieldset>
          <legend>Where</legend>
          <Field label="Runtime" error={errors.runtime} hint={hybrid.length === 0 && rts.data ? 'No hybrid runtime: Delivery Pipelines run on hybrid runtimes.' : undefined}>
            <select value={rt} onChange={(e) => set('runtime', e.target.value)}>
              {hybrid.map((r) => (
                <option key={r.name} value={r.name}>
                  {r.name}
                  {reachable(r) ? '' : ` (${r.status})`}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Git Source" error={errors.gitSource ?? unreachableNote(chosen) ?? (sources.error ? errorMessage(sources.error) : undefined)}>
            <select value={gs} onChange={(e) => set('gitSource', e.target.value)}>
              {(sources.data?.items ?? []).map((g) => (
                <option key={g.metadata.name} value={g.metadata.name}>
                  {g.metadata.name}
                </option>
              ))}
            </select>
          </Field>
          <Field label="Name" error={errors.name} hint="The Sensor, the EventSource and the runs' names: lowercase letters, digits and '-'.">
            <input value={f.name} onChange={(e) => set('name', e.target.value)} autoComplete="off" />
          </Field>
          <Field label="Namespace" error={errors.namespace} hint="Default: the Git Source's destination namespace.">
            <input value={f.namespace} onChange={(e) => set('namespace', e.target.value)} autoComplete="off" />
          </Field>
        </fieldset>
        <fieldset>
          <legend>Event</legend>
          <Field label="Event type">
            <select value={f.eventType} onChange={(e) => set('eventType', e.target.value as EventType)}>
              {EVENT_TYPES.map((t) => (
                <option key={t.value} value={t.value}>
                  {t.label}
                </option>
              ))}
            </select>
          </Field>
          {f.eventType === 'calendar' ? (
            <Field label="Schedule" error={errors.schedule} hint="Cron: minute hour day month weekday, as 0 3 * * *.">
              <input value={f.schedule} onChange={(e) => set('schedule', e.target.value)} autoComplete="off" />
            </Field>
          ) : (
            <>
              {git && (
                <>
                  <Field label="Owner" error={errors.owner}>
                    <input value={f.owner} onChange={(e) => set('owner', e.target.value)} autoComplete="off" />
                  </Field>
                  <Field label="Repository" error={errors.repository}>
                    <input value={f.repository} onChange={(e) => set('repository', e.target.value)} autoComplete="off" />
                  </Field>
                </>
              )}
              <Field label="Endpoint" error={errors.endpoint} hint={`Default: /${f.name || 'NAME'}.`}>
                <input value={f.endpoint} onChange={(e) => set('endpoint', e.target.value)} autoComplete="off" />
              </Field>
              <Field label="Secret name" error={errors.secretName} hint="The Secret in the pipeline's namespace that holds the webhook secret.">
                <input value={f.secretName} onChange={(e) => set('secretName', e.target.value)} autoComplete="off" />
              </Field>
              <Field label="Secret key" hint="Default: secret.">
                <input value={f.secretKey} onChange={(e) => set('secretKey', e.target.value)} autoComplete="off" />
              </Field>
            </>
          )}
        </fieldset>
        <fieldset>
          <legend>Workflow template</legend>
          <Field label="From">
            <select value={f.templateFrom} onChange={(e) => setF((o) => ({ ...o, templateFrom: e.target.value as 'hub' | 'existing', template: '', parameters: [] }))}>
              <option value="hub">The Hub (committed with the pipeline)</option>
              <option value="existing">A WorkflowTemplate of the runtime</option>
            </select>
          </Field>
          <Field label="Template" error={errors.template ?? (hubTemplate.error ? errorMessage(hubTemplate.error) : undefined)}>
            <select value={f.template} onChange={(e) => setF((o) => ({ ...o, template: e.target.value, parameters: [] }))}>
              <option value="">Choose…</option>
              {f.templateFrom === 'hub'
                ? (catalogue.data?.items ?? []).map((t) => (
                    <option key={t.name} value={t.name}>
                      {t.name} — {t.description}
                    </option>
                  ))
                : (existing.data?.items ?? [])
                    .filter((t) => t.kind === 'WorkflowTemplate')
                    .map((t) => (
                      <option key={`${t.namespace}/${t.name}`} value={t.name}>
                        {t.name} ({t.namespace})
                      </option>
                    ))}
            </select>
          </Field>
          {params.map((p) => (
            <Field key={p} label={`Parameter ${p}`} hint="Default: the template's value.">
              <input value={paramValue(p)} onChange={(e) => setParam(p, e.target.value)} autoComplete="off" />
            </Field>
          ))}
        </fieldset>
        {error && (
          <p role="alert" className="error-note">
            {error}
          </p>
        )}
        <div className="page-actions">
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? 'Committing…' : 'Commit pipeline'}
          </button>
          <Link to="/delivery-pipelines" className="button">
            Cancel
          </Link>
        </div>
      </form>
    </div>
  );
}

/** A pipeline's or a CronWorkflow's runs, each linking to its run page (live) or archived run. */
export function RunsTable({ runtime, runs, now }: { runtime: string; runs: PipelineRun[]; now: number }) {
  return (
    <div className="table-scroll">
      <table className="table" aria-label="Runs">
        <thead>
          <tr>
            <th>Run</th>
            <th>Phase</th>
            <th>Started</th>
            <th>Finished</th>
            <th>Where</th>
          </tr>
        </thead>
        <tbody>
          {runs.map((r) => (
            <tr key={r.name} data-testid={`run-${r.name}`}>
              <td>
                <Link to={runHref(runtime, r)}>{r.name}</Link>
                {r.message && <div className="muted small">{r.message}</div>}
              </td>
              <td>
                <PhaseBadge phase={r.phase} />
              </td>
              <td title={formatTime(r.startedAt ?? undefined)}>{relativeTime(r.startedAt ?? undefined, now)}</td>
              <td>{r.finishedAt ? formatTime(r.finishedAt) : <span className="muted">—</span>}</td>
              <td>{r.live ? 'runtime' : <span className="muted">archive</span>}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
