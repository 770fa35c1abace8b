// A Delivery Pipeline's run (docs/webui.md): the Workflow's node tree as a left-to-right graph
// coloured by phase; a node's inputs, outputs, artifacts and log (followed while it runs,
// through the app-proxy's workflow log endpoint); and the operations the app-proxy performs
// (terminate, stop, retry, resubmit, suspend, resume), each confirmed first; a run waiting at
// an approval gate (a suspend step whose outputs are supplied) is resumed through a form that
// asks for them (ApprovalDialog). A run the runtime has deleted is read from the control plane's
// archive (its nodes, without logs).
import { useEffect, useMemo, useRef, useState } from 'react';
import { workflowsApi, type WorkflowArtifact, type WorkflowNode, type WorkflowOp, type WorkflowParameter } from '../api/workflows';
import { navigate } from '../app/router';
import { ApprovalDialog, approvalGates, waitingNodes } from '../components/ApprovalDialog';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { PageHeader } from '../components/PageHeader';
import { ErrorState, LoadingRows } from '../components/States';
import { formatTime } from '../lib/format';
import { useResource } from '../lib/useResource';
import { useVisiblePoll } from '../lib/useVisiblePoll';
import { finished, layoutWorkflow, NODE_H, NODE_W, phaseTone } from '../lib/workflowGraph';
import { PhaseBadge } from './DeliveryPipelines';

const seg = encodeURIComponent;

/** A node as the run page shows it: the live node, or an archived one (fewer fields). */
type RunNode = Pick<WorkflowNode, 'id' | 'name' | 'displayName' | 'type' | 'templateName' | 'phase' | 'message' | 'startedAt' | 'finishedAt' | 'children'> &
  Partial<Pick<WorkflowNode, 'podName' | 'inputs' | 'outputs' | 'result' | 'exitCode' | 'inputArtifacts' | 'outputArtifacts'>>;

export function WorkflowGraph({ nodes, selected, onSelect }: { nodes: RunNode[]; selected: string; onSelect: (id: string) => void }) {
  const layout = useMemo(() => layoutWorkflow(nodes), [nodes]);
  if (nodes.length === 0) return <p className="muted">No nodes yet: the workflow controller has not started it.</p>;
  return (
    <div className="wf-graph-scroll" role="region" aria-label="Workflow graph" tabIndex={0}>
      <div className="wf-graph" style={{ width: layout.width, height: layout.height }}>
        <svg className="wf-edges" width={layout.width} height={layout.height} aria-hidden="true">
          {layout.edges.map((e) => {
            const mid = (e.x1 + e.x2) / 2;
            return <path key={`${e.from}>${e.to}`} d={`M${e.x1},${e.y1} C${mid},${e.y1} ${mid},${e.y2} ${e.x2},${e.y2}`} />;
          })}
        </svg>
        <ul className="wf-nodes" aria-label="Nodes">
          {layout.nodes.map(({ node: n, x, y }) => (
            <li key={n.id} style={{ left: x, top: y, width: NODE_W, height: NODE_H }}>
              <button
                type="button"
                className={`wf-node wf-${phaseTone(n.phase)}${selected === n.id ? ' wf-selected' : ''}`}
                aria-pressed={selected === n.id}
                data-testid={`wf-node-${n.displayName || n.name}`}
                data-phase={n.phase}
                title={`${n.displayName || n.name} (${n.type}): ${n.phase}${n.message ? ` — ${n.message}` : ''}`}
                onClick={() => onSelect(n.id)}
              >
                <span className="wf-node-name">{n.displayName || n.name}</span>
                <span className="wf-node-meta">
                  {n.type} · {n.phase || 'Pending'}
                </span>
              </button>
            </li>
          ))}
        </ul>
      </div>
    </div>
  );
}

function Params({ title, params }: { title: string; params: WorkflowParameter[] }) {
  return (
    <section>
      <h3>{title}</h3>
      {params.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <dl className="wf-kv">
          {params.map((p) => (
            <div key={p.name}>
              <dt>
                <code>{p.name}</code>
              </dt>
              <dd>
                <code className="wrap">{p.value}</code>
              </dd>
            </div>
          ))}
        </dl>
      )}
    </section>
  );
}

function artifactWhere(a: WorkflowArtifact): string {
  switch (a.location) {
    case 's3':
      return `s3://${a.bucket}/${a.key}${a.endpoint ? ` at ${a.endpoint}` : ''}`;
    case 'git':
      return `${a.url}${a.revision ? `@${a.revision}` : ''}`;
    case 'http':
      return a.url;
    case 'raw':
      return 'inline (raw)';
    default:
      return 'not produced';
  }
}

function Artifacts({ title, items }: { title: string; items: WorkflowArtifact[] }) {
  return (
    <section>
      <h3>{title}</h3>
      {items.length === 0 ? (
        <p className="muted">None.</p>
      ) : (
        <ul className="wf-artifacts">
          {items.map((a) => (
            <li key={a.name} data-testid={`artifact-${a.name}`}>
              <code>{a.name}</code> {a.path && <span className="muted">({a.path})</span>} — <code className="wrap">{artifactWhere(a)}</code>
              {a.deleted && <span className="muted"> · deleted by artifactGC</span>}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** A node's log: read once when the node has finished, followed while it runs. */
export function NodeLog({ url, follow }: { url: string; follow: boolean }) {
  const [text, setText] = useState('');
  const [state, setState] = useState<'loading' | 'live' | 'done' | 'error'>('loading');
  const [err, setErr] = useState('');
  const pre = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const ac = new AbortController();
    setText('');
    setErr('');
    setState('loading');
    (async () => {
      try {
        const res = await fetch(url, { signal: ac.signal, credentials: 'same-origin', headers: { Accept: 'text/plain' } });
        if (!res.ok) {
          let msg = `${res.status} ${res.statusText}`;
          try {
            const b = await res.json();
            msg = b?.error?.message ?? msg;
          } catch {
            /* not JSON */
          }
          throw new Error(msg);
        }
        if (follow) setState('live');
        const reader = res.body!.getReader();
        const dec = new TextDecoder();
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          const chunk = dec.decode(value, { stream: true });
          setText((t) => (t.length > 1_000_000 ? t.slice(-500_000) : t) + chunk);
        }
        setState('done');
      } catch (e) {
        if (ac.signal.aborted) return;
        setErr(e instanceof Error ? e.message : String(e));
        setState('error');
      }
    })();
    return () => ac.abort();
  }, [url, follow]);
  useEffect(() => {
    if (pre.current && state === 'live') pre.current.scrollTop = pre.current.scrollHeight;
  }, [text, state]);
  return (
    <section>
      <h3>
        Log{' '}
        <span className="muted small" data-testid="log-state">
          {state === 'live' ? '· following' : state === 'loading' ? '· loading' : state === 'done' ? '· complete' : ''}
        </span>
      </h3>
      {state === 'error' ? (
        <p className="error-note" role="alert">
          {err}
        </p>
      ) : (
        <pre className="wf-log" ref={pre} data-testid="node-log" tabIndex={0} aria-label="Node log">
          {text || (state === 'done' ? '(empty)' : '')}
        </pre>
      )}
    </section>
  );
}

function NodePanel({ node, logURL }: { node: RunNode; logURL?: string }) {
  return (
    <aside className="card wf-panel" aria-label={`Node ${node.displayName || node.name}`} data-testid="node-panel">
      <h2>
        {node.displayName || node.name} <PhaseBadge phase={node.phase} />
      </h2>
      <dl className="wf-kv">
        <div>
          <dt>Type</dt>
          <dd>{node.type}</dd>
        </div>
        <div>
          <dt>Template</dt>
          <dd>{node.templateName || '—'}</dd>
        </div>
        <div>
          <dt>Started</dt>
          <dd>{node.startedAt ? formatTime(node.startedAt) : '—'}</dd>
        </div>
        <div>
          <dt>Finished</dt>
          <dd>{node.finishedAt ? formatTime(node.finishedAt) : '—'}</dd>
        </div>
        {node.exitCode != null && (
          <div>
            <dt>Exit code</dt>
            <dd>{node.exitCode}</dd>
          </div>
        )}
      </dl>
      {node.message && <p className="muted">{node.message}</p>}
      {node.inputs !== undefined && <Params title="Inputs" params={node.inputs ?? []} />}
      {node.outputs !== undefined && <Params title="Outputs" params={[...(node.outputs ?? []), ...(node.result != null ? [{ name: 'result', value: node.result }] : [])]} />}
      {node.inputArtifacts !== undefined && <Artifacts title="Input artifacts" items={node.inputArtifacts ?? []} />}
      {node.outputArtifacts !== undefined && <Artifacts title="Output artifacts" items={node.outputArtifacts ?? []} />}
      {logURL ? <NodeLog url={logURL} follow={!finished(node.phase)} /> : node.type === 'Pod' && <p className="muted">The archive keeps no logs.</p>}
    </aside>
  );
}

const OPS: { op: WorkflowOp; label: string; what: string; danger?: boolean; when: (phase: string, suspended: boolean, waiting: boolean) => boolean }[] = [
  { op: 'suspend', label: 'Suspend', what: 'No new steps start until it is resumed.', when: (p, s) => p === 'Running' && !s },
  { op: 'resume', label: 'Resume', what: 'Its suspended steps go on.', when: (p, s, w) => p === 'Running' && (s || w) },
  { op: 'stop', label: 'Stop', what: 'Running steps are stopped; exit handlers still run.', danger: true, when: (p) => p === 'Running' || p === 'Pending' },
  { op: 'terminate', label: 'Terminate', what: 'Running steps are killed at once; exit handlers do not run.', danger: true, when: (p) => p === 'Running' || p === 'Pending' },
  { op: 'retry', label: 'Retry', what: 'Its failed steps run again, in this workflow.', when: (p) => p === 'Failed' || p === 'Error' },
  { op: 'resubmit', label: 'Resubmit', what: 'A new workflow runs with the same spec and parameters.', when: (p) => finished(p) },
];

export default function WorkflowRun({ params }: { params: Record<string, string> }) {
  const { runtime, namespace, name } = params;
  const wf = useResource((signal) => workflowsApi.get(runtime, namespace, name, signal), [runtime, namespace, name]);
  const running = !!wf.data && !finished(wf.data.phase);
  useVisiblePoll(wf.reload, 3000, running);
  const [sel, setSel] = useState('');
  const [confirm, setConfirm] = useState<(typeof OPS)[number]>();
  const nodes = wf.data?.nodes ?? [];
  const node = nodes.find((n) => n.id === sel);
  const waiting = waitingNodes(nodes).length > 0;
  const gates = useMemo(() => approvalGates(nodes), [nodes]);
  return (
    <div data-page="workflow-run">
      <PageHeader
        title={name}
        actions={
          wf.data && (
            <div className="page-actions" aria-label="Operations">
              {OPS.filter((o) => o.when(wf.data!.phase, wf.data!.suspended, waiting)).map((o) => (
                <button key={o.op} type="button" className={o.danger ? 'button button-danger' : 'button'} onClick={() => setConfirm(o)}>
                  {o.label}
                </button>
              ))}
            </div>
          )
        }
      >
        {wf.data && (
          <>
            <PhaseBadge phase={wf.data.phase} /> {wf.data.template && <code>{wf.data.template}</code>} on {runtime} · {namespace}
            {wf.data.sensor && <> · pipeline {wf.data.sensor}</>}
            {wf.data.suspended && <> · suspended</>}
            {wf.data.message && <div className="muted">{wf.data.message}</div>}
          </>
        )}
      </PageHeader>
      {wf.error ? (
        <ErrorState error={wf.error} onRetry={wf.reload} />
      ) : !wf.data ? (
        <LoadingRows />
      ) : (
        <div className="wf-run">
          <WorkflowGraph nodes={nodes} selected={sel} onSelect={setSel} />
          {node ? (
            <NodePanel
              key={node.id}
              node={node}
              logURL={node.type === 'Pod' && node.phase !== 'Pending' ? workflowsApi.logURL(runtime, namespace, name, node.id, !finished(node.phase)) : undefined}
            />
          ) : (
            <p className="muted">Choose a node to see its inputs, outputs, artifacts and log.</p>
          )}
        </div>
      )}
      {confirm?.op === 'resume' && wf.data && gates.length > 0 ? (
        <ApprovalDialog
          workflow={name}
          gates={gates}
          send={(body) => workflowsApi.resume(runtime, namespace, name, body)}
          onDone={() => {
            setConfirm(undefined);
            wf.reload({ quiet: true });
          }}
          onClose={() => setConfirm(undefined)}
        />
      ) : confirm && wf.data && (
        <ConfirmDialog
          open
          title={`${confirm.label} ${name}?`}
          confirmLabel={confirm.label}
          danger={confirm.danger}
          onClose={() => setConfirm(undefined)}
          onConfirm={async () => {
            const d = await workflowsApi.op(runtime, namespace, name, confirm.op);
            if (confirm.op === 'resubmit' && d.name !== name) navigate(`/workflows/${seg(runtime)}/${seg(d.namespace)}/${seg(d.name)}`);
            else wf.reload({ quiet: true });
          }}
        >
          {confirm.what}
        </ConfirmDialog>
      )}
    </div>
  );
}

export function ArchivedWorkflowRun({ params }: { params: Record<string, string> }) {
  const a = useResource((signal) => workflowsApi.archivedOne(params.id, signal), [params.id]);
  const [sel, setSel] = useState('');
  const nodes = a.data?.nodes ?? [];
  const node = nodes.find((n) => n.id === sel);
  return (
    <div data-page="archived-workflow-run">
      <PageHeader title={a.data?.name ?? 'Archived run'}>
        {a.data && (
          <>
            <PhaseBadge phase={a.data.phase} /> archived from {a.data.runtime} · {a.data.namespace} · finished {formatTime(a.data.finishedAt)}
            {a.data.template && (
              <>
                {' '}
                · <code>{a.data.template}</code>
              </>
            )}
            {a.data.message && <div className="muted">{a.data.message}</div>}
          </>
        )}
      </PageHeader>
      {a.error ? (
        <ErrorState error={a.error} onRetry={a.reload} />
      ) : !a.data ? (
        <LoadingRows />
      ) : (
        <div className="wf-run">
          <WorkflowGraph nodes={nodes} selected={sel} onSelect={setSel} />
          {node ? <NodePanel key={node.id} node={node} /> : <p className="muted">Choose a node to see its details.</p>}
        </div>
      )}
    </div>
  );
}

