// CronWorkflows (docs/webui.md "CronWorkflows", docs/runtimes.md "Delivery Pipelines"): every
// hybrid runtime's Argo CronWorkflows with their schedules, state and counts; and one
// CronWorkflow's spec, its runs (live from the runtime, archived by the control plane) and the
// suspend and resume operations of the app-proxy's cron-workflows API.
import { useState, type ReactNode } from 'react';
import { errorMessage } from '../api/client';
import { runtimes } from '../api/rest';
import { workflowsApi, type ArchivedWorkflow, type CronWorkflow, type CronWorkflowOp } from '../api/workflows';
import { Link } from '../app/router';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { cronOpOf, cronRunsOf, cronState, scheduleText } from '../lib/cronWorkflows';
import type { PipelineRun } from '../lib/deliveryPipelines';
import { formatTime, relativeTime } from '../lib/format';
import { reachable } from '../lib/runtimes';
import { useResource } from '../lib/useResource';
import { RunsTable } from './DeliveryPipelines';

const seg = encodeURIComponent;

export const cronHref = (runtime: string, cw: { namespace: string; name: string }) =>
  `/delivery-pipelines/cron-workflows/${seg(runtime)}/${seg(cw.namespace)}/${seg(cw.name)}`;

const STATE_TONE = { Active: 'success', Suspended: 'warning', Stopped: 'neutral', Invalid: 'danger' } as const;

export function CronStateBadge({ cw }: { cw: Pick<CronWorkflow, 'phase' | 'suspended' | 'conditions'> }) {
  const s = cronState(cw);
  return <Badge tone={STATE_TONE[s]}>{s}</Badge>;
}

/** One runtime's CronWorkflows. */
export function CronWorkflowTable({ runtime, items, now }: { runtime: string; items: CronWorkflow[]; now: number }) {
  return (
    <div className="table-scroll">
      <table className="table" aria-label={`CronWorkflows on ${runtime}`}>
        <thead>
          <tr>
            <th>Name</th>
            <th>Schedules</th>
            <th>Timezone</th>
            <th>Suspended</th>
            <th>Last scheduled</th>
            <th>Succeeded</th>
            <th>Failed</th>
            <th>Active</th>
          </tr>
        </thead>
        <tbody>
          {items.map((cw) => (
            <tr key={`${cw.namespace}/${cw.name}`} data-testid={`cron-${cw.name}`}>
              <td>
                <Link to={cronHref(runtime, cw)} className="strong">
                  {cw.name}
                </Link>
                <div className="muted small">{cw.namespace}</div>
                {(cw.conditions ?? []).map((c) => (
                  <div key={c.type} className="field-error">
                    {c.type}: {c.message}
                  </div>
                ))}
              </td>
              <td>
                <code>{scheduleText(cw)}</code>
              </td>
              <td>{cw.timezone || <span className="muted">UTC</span>}</td>
              <td>{cw.suspended ? <Badge tone="warning">Suspended</Badge> : cw.phase === 'Stopped' ? <Badge tone="neutral">Stopped</Badge> : 'No'}</td>
              <td title={formatTime(cw.lastScheduledTime ?? undefined)}>{cw.lastScheduledTime ? relativeTime(cw.lastScheduledTime, now) : <span className="muted">never</span>}</td>
              <td>{cw.succeeded}</td>
              <td>{cw.failed}</td>
              <td>
                {(cw.active ?? []).length === 0 ? (
                  <span className="muted">none</span>
                ) : (
                  (cw.active ?? []).map((a) => (
                    <div key={a}>
                      <Link to={`/workflows/${seg(runtime)}/${seg(cw.namespace)}/${seg(a)}`}>{a}</Link>
                    </div>
                  ))
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

async function loadCrons(signal: AbortSignal): Promise<{ runtimes: { name: string; items: CronWorkflow[] }[]; problems: string[]; hybrid: number }> {
  const rts = (await runtimes.list(signal)).items.filter((r) => r.type === 'hybrid');
  const problems: string[] = [];
  const per = await Promise.all(
    rts.map(async (r) => {
      if (!reachable(r)) {
        problems.push(`${r.name}: the runtime is ${r.status}; its CronWorkflows show when it connects`);
        return { name: r.name, items: [] };
      }
      try {
        return { name: r.name, items: (await workflowsApi.cronWorkflows(r.name, signal)).items };
      } catch (err) {
        problems.push(`${r.name}: ${errorMessage(err)}`);
        return { name: r.name, items: [] };
      }
    }),
  );
  return { runtimes: per.filter((r) => r.items.length > 0), problems, hybrid: rts.length };
}

export default function CronWorkflows() {
  const list = useResource((signal) => loadCrons(signal), []);
  const now = Date.now();
  return (
    <div data-page="cron-workflows">
      <PageHeader
        title="CronWorkflows"
        actions={
          <Link to="/delivery-pipelines" className="button">
            Delivery Pipelines
          </Link>
        }
      >
        Argo CronWorkflows: a Workflow run on a schedule by a hybrid runtime. Create them with <code>freshet cron-workflow create</code> or from a Git Source.
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
          {list.data.runtimes.length === 0 ? (
            <EmptyState title="No CronWorkflows yet">
              {list.data.hybrid === 0 ? 'CronWorkflows run on hybrid runtimes: install one first.' : 'Create one with freshet cron-workflow create -f FILE, or commit one to a Git Source.'}
            </EmptyState>
          ) : (
            list.data.runtimes.map((r) => (
              <section key={r.name} data-testid={`cron-runtime-${r.name}`}>
                <h2>
                  <Link to={`/runtimes/${seg(r.name)}`}>{r.name}</Link>
                </h2>
                <CronWorkflowTable runtime={r.name} items={r.items} now={now} />
              </section>
            ))
          )}
        </>
      )}
    </div>
  );
}

/** What a CronWorkflow's spec and status say. */
export function CronSummary({ cw, now }: { cw: CronWorkflow; now: number }) {
  const row = (label: string, value: ReactNode) => (
    <div>
      <dt>{label}</dt>
      <dd>{value}</dd>
    </div>
  );
  const none = <span className="muted">—</span>;
  return (
    <dl className="wf-kv card" aria-label="Spec" data-testid="cron-summary">
      {row('State', <CronStateBadge cw={cw} />)}
      {row('Schedules', <code>{scheduleText(cw)}</code>)}
      {row('Timezone', cw.timezone || 'UTC')}
      {row('Concurrency policy', cw.concurrencyPolicy || 'Allow')}
      {row('Starting deadline', cw.startingDeadlineSeconds != null ? `${cw.startingDeadlineSeconds} s` : none)}
      {row('When', cw.when ? <code className="wrap">{cw.when}</code> : none)}
      {row('Stop strategy', cw.stopExpression ? <code className="wrap">{cw.stopExpression}</code> : none)}
      {row('Runs', cw.template ? <code>{cw.template}</code> : <>its own templates{cw.entrypoint && <> (entrypoint <code>{cw.entrypoint}</code>)</>}</>)}
      {row('Last scheduled', cw.lastScheduledTime ? <span title={formatTime(cw.lastScheduledTime)}>{relativeTime(cw.lastScheduledTime, now)}</span> : 'never')}
      {row('Next scheduled', cw.nextScheduledTime ? formatTime(cw.nextScheduledTime) : none)}
      {row('Succeeded / failed', `${cw.succeeded} / ${cw.failed}`)}
      {cw.creator && row('Created by', cw.creator)}
      {(cw.conditions ?? []).map((c) => row(c.type, <span className="field-error">{c.message}</span>))}
    </dl>
  );
}

/** Its runs, newest first, each linking to its run page (live) or archived run. */
export function CronRuns({ runtime, runs, now }: { runtime: string; runs: PipelineRun[]; now: number }) {
  if (runs.length === 0) return <EmptyState title="No runs yet">It runs at its next scheduled time (kept: as many as its history limits say, then the archive).</EmptyState>;
  return (
    <RunsTable runtime={runtime} runs={runs} now={now} />
  );
}

const OP_TEXT: Record<CronWorkflowOp, { label: string; what: string }> = {
  suspend: { label: 'Suspend', what: 'Nothing is scheduled until it is resumed; its running Workflows go on.' },
  resume: { label: 'Resume', what: 'It runs again at its next scheduled time (missed times are not run).' },
};

/** Archived runs, or none when the archive cannot be read (the live runs still show). */
const archivedOrNone = (q: { runtime: string; namespace: string }, signal: AbortSignal): Promise<ArchivedWorkflow[]> =>
  workflowsApi.archived({ ...q, limit: 200 }, signal).then(
    (p) => p.items,
    () => [],
  );

export function CronWorkflowPage({ params }: { params: Record<string, string> }) {
  const { runtime, namespace, name } = params;
  const data = useResource(
    async (signal) => {
      const [cw, w, a] = await Promise.all([workflowsApi.cronWorkflow(runtime, namespace, name, signal), workflowsApi.list(runtime, signal), archivedOrNone({ runtime, namespace }, signal)]);
      return { cw, runs: cronRunsOf(cw, w.items, a, runtime) };
    },
    [runtime, namespace, name],
  );
  const [confirm, setConfirm] = useState<CronWorkflowOp>();
  const now = Date.now();
  const op = data.data ? cronOpOf(data.data.cw) : undefined;
  return (
    <div data-page="cron-workflow">
      <PageHeader
        title={name}
        actions={
          op && (
            <div className="page-actions" aria-label="Operations">
              <button type="button" className="button" onClick={() => setConfirm(op)}>
                {OP_TEXT[op].label}
              </button>
            </div>
          )
        }
      >
        CronWorkflow on <Link to={`/runtimes/${seg(runtime)}`}>{runtime}</Link> · namespace {namespace} · <Link to="/delivery-pipelines/cron-workflows">all CronWorkflows</Link>
      </PageHeader>
      {data.error ? (
        <ErrorState error={data.error} onRetry={data.reload} />
      ) : !data.data ? (
        <LoadingRows />
      ) : (
        <>
          {data.data.cw.phase === 'Stopped' && (
            <p className="muted">Its stopStrategy held ({data.data.cw.stopExpression}): it runs no more. Delete it and create it again to start afresh.</p>
          )}
          <CronSummary cw={data.data.cw} now={now} />
          <h2>Runs</h2>
          <CronRuns runtime={runtime} runs={data.data.runs} now={now} />
        </>
      )}
      {confirm && (
        <ConfirmDialog
          open
          title={`${OP_TEXT[confirm].label} ${name}?`}
          confirmLabel={OP_TEXT[confirm].label}
          onClose={() => setConfirm(undefined)}
          onConfirm={async () => {
            await workflowsApi.cronOp(runtime, namespace, name, confirm);
            data.reload({ quiet: true });
          }}
        >
          {OP_TEXT[confirm].what}
        </ConfirmDialog>
      )}
    </div>
  );
}
