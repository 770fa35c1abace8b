// An application's Argo Rollouts on its page: each Rollout's steps, weight, revisions and
// analysis runs (their measurements charted), with a button for each operation
// (docs/webui.md, "Rollouts").
import { useState } from 'react';
import { rolloutsApi, type AnalysisMetric, type RolloutOperation } from '../api/rollouts';
import { useResource } from '../lib/useResource';
import { useVisiblePoll } from '../lib/useVisiblePoll';
import { StatusBadge } from './Badge';
import { EmptyState, ErrorNote, ErrorState, LoadingRows } from './States';

/** How often a visible Rollout is read again: steps move in seconds. */
const POLL_MS = 2000;

const STEP_ICON: Record<string, string> = { Succeeded: '✔', Running: '▶', Aborted: '✖', Pending: '○' };

export function RolloutsPanel({ runtime, app, canWrite }: { runtime: string; app: string; canWrite: boolean }) {
  const list = useResource((signal) => rolloutsApi.list(runtime, app, signal), [runtime, app]);
  useVisiblePoll(() => list.reload({ quiet: true }), POLL_MS * 5);
  if (list.error !== undefined && !list.data) return <ErrorState error={list.error} onRetry={list.reload} />;
  if (!list.data) return <LoadingRows rows={3} label="Loading rollouts" />;
  if (list.data.items.length === 0) {
    return <EmptyState title="No rollouts">The application defines no Argo Rollouts. A Rollout in its manifests is shown here with its steps, revisions and analysis.</EmptyState>;
  }
  return (
    <div data-testid="app-rollouts">
      {list.data.items.map((r) => (
        <RolloutView key={`${r.namespace}/${r.name}`} runtime={runtime} app={app} namespace={r.namespace} name={r.name} canWrite={canWrite} />
      ))}
    </div>
  );
}

function RolloutView({ runtime, app, namespace, name, canWrite }: { runtime: string; app: string; namespace: string; name: string; canWrite: boolean }) {
  const ro = useResource((signal) => rolloutsApi.get(runtime, app, namespace, name, signal), [runtime, app, namespace, name]);
  useVisiblePoll(() => ro.reload({ quiet: true }), POLL_MS);
  const [busy, setBusy] = useState<string>();
  const [opError, setOpError] = useState<unknown>();
  const [undoTo, setUndoTo] = useState(0);
  const d = ro.data;
  if (ro.error !== undefined && !d) return <ErrorState error={ro.error} onRetry={ro.reload} />;
  if (!d) return <LoadingRows rows={3} label={`Loading rollout ${name}`} />;
  const run = async (op: RolloutOperation, label: string, body?: { full: boolean } | { toRevision: number }) => {
    setBusy(label);
    setOpError(undefined);
    try {
      await rolloutsApi.operate(runtime, app, namespace, name, op, body ?? {});
      ro.reload({ quiet: true });
    } catch (e) {
      setOpError(e);
    } finally {
      setBusy(undefined);
    }
  };
  const updating = d.canaryRevision !== null;
  const paused = d.phase === 'Paused';
  const ops: { op: RolloutOperation; label: string; body?: { full: boolean } | { toRevision: number }; show: boolean; danger?: boolean }[] = [
    { op: 'promote', label: 'Promote', body: { full: false }, show: updating && !d.aborted },
    { op: 'promote', label: 'Promote full', body: { full: true }, show: updating && !d.aborted },
    { op: 'abort', label: 'Abort', show: updating && !d.aborted, danger: true },
    { op: 'retry', label: 'Retry', show: d.aborted },
    { op: 'pause', label: 'Pause', show: !d.paused },
    { op: 'resume', label: 'Resume', show: d.paused },
    { op: 'restart', label: 'Restart', show: true },
  ];
  const older = d.revisions.filter((r) => r.role === 'old' || (updating && r.role === 'stable'));
  return (
    <section className="card rollout" data-testid="rollout" data-name={name} data-phase={d.phase} data-step={d.step ?? ''} aria-label={`Rollout ${name}`}>
      <header className="rollout-head">
        <h3>
          {name} <span className="muted small">{namespace}</span>
        </h3>
        <StatusBadge value={d.phase || 'Unknown'} />
        <span className="muted">{d.strategy}</span>
        {d.step !== null && (
          <span data-testid="rollout-step">
            step {d.step}/{d.steps.length}
          </span>
        )}
        {d.message && <span className="muted small ellipsis">{d.message}</span>}
      </header>
      {d.weight !== null && (
        <div className="rollout-weight" data-testid="rollout-weight" title={`canary ${d.weight}%, stable ${100 - d.weight}%`}>
          <span className="small">canary {d.weight}%</span>
          <div className="meter" role="meter" aria-valuemin={0} aria-valuemax={100} aria-valuenow={d.weight} aria-label="Canary weight">
            <div className="meter-fill" style={{ width: `${d.weight}%` }} />
          </div>
        </div>
      )}
      <div className="button-row">
        {ops
          .filter((o) => o.show)
          .map((o) => (
            <button
              key={o.label}
              type="button"
              className={`button button-small${o.danger ? ' button-danger-quiet' : ''}`}
              disabled={!canWrite || !!busy}
              onClick={() => run(o.op, o.label, o.body)}
              data-testid={`rollout-${o.label.toLowerCase().replace(' ', '-')}`}
            >
              {busy === o.label ? `${o.label}…` : o.label}
            </button>
          ))}
        {older.length > 0 && (
          <span className="undo">
            <select aria-label="Revision to roll back to" value={undoTo} onChange={(e) => setUndoTo(Number(e.target.value))} disabled={!canWrite || !!busy}>
              <option value={0}>previous revision</option>
              {older.map((r) => (
                <option key={r.revision} value={r.revision}>
                  revision {r.revision}
                </option>
              ))}
            </select>
            <button type="button" className="button button-small" disabled={!canWrite || !!busy} onClick={() => run('undo', 'Undo', { toRevision: undoTo })} data-testid="rollout-undo">
              {busy === 'Undo' ? 'Undo…' : 'Undo'}
            </button>
          </span>
        )}
        {!paused && !updating && <span className="muted small">Fully promoted: a new revision from git starts the next update.</span>}
      </div>
      {opError !== undefined && <ErrorNote error={opError} />}
      {d.steps.length > 0 && (
        <ol className="rollout-steps" data-testid="rollout-steps" aria-label="Steps">
          {d.steps.map((s) => (
            <li key={s.index} data-status={s.status} className={`rollout-step rollout-step-${s.status.toLowerCase()}`}>
              <span aria-hidden="true">{STEP_ICON[s.status] ?? '○'}</span> {stepLabel(s.type, s.value)} <span className="muted small">{s.status}</span>
            </li>
          ))}
        </ol>
      )}
      <table className="table small" data-testid="rollout-revisions">
        <thead>
          <tr>
            <th>Revision</th>
            <th>Role</th>
            <th>Hash</th>
            <th>Ready</th>
            <th>Images</th>
          </tr>
        </thead>
        <tbody>
          {d.revisions.map((r) => (
            <tr key={r.revision} data-role={r.role}>
              <td>{r.revision}</td>
              <td>{r.role}</td>
              <td>
                <code>{r.podTemplateHash}</code>
              </td>
              <td>
                {r.ready}/{r.replicas}
              </td>
              <td>{r.images.join(', ')}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {d.analysisRuns.length > 0 && (
        <div data-testid="rollout-analysis">
          <h4>Analysis runs</h4>
          {d.analysisRuns.map((a) => (
            <div key={a.name} className="analysis-run" data-phase={a.phase}>
              <div>
                <StatusBadge value={a.phase || 'Pending'} /> <code>{a.name}</code> {a.message && <span className="muted small">{a.message}</span>}
              </div>
              {a.metrics.map((m) => (
                <MetricView key={m.name} m={m} />
              ))}
            </div>
          ))}
        </div>
      )}
    </section>
  );
}

function stepLabel(type: string, value: string): string {
  if (type === 'setWeight') return `set weight ${value}%`;
  if (type === 'pause') return value ? `pause ${value}` : 'pause until promoted';
  return value ? `${type} ${value}` : type;
}

/** A metric with its measurements charted: numeric values as a line, others as marks. */
function MetricView({ m }: { m: AnalysisMetric }) {
  const values = m.measurements.map((x) => Number.parseFloat(x.value));
  const numeric = values.filter((v) => Number.isFinite(v));
  const w = 160;
  const h = 32;
  const lo = Math.min(...numeric, 0);
  const hi = Math.max(...numeric, 1);
  const x = (i: number) => (m.measurements.length <= 1 ? w / 2 : (i * w) / (m.measurements.length - 1));
  const y = (v: number) => h - 2 - ((v - lo) / (hi - lo || 1)) * (h - 4);
  const points = values.map((v, i) => (Number.isFinite(v) ? `${x(i)},${y(v)}` : '')).filter(Boolean).join(' ');
  return (
    <div className="analysis-metric" data-testid="analysis-metric" data-name={m.name}>
      <span className="strong">{m.name}</span> <StatusBadge value={m.phase || 'Pending'} />{' '}
      <span className="muted small">
        {m.successful} of {m.count} successful, {m.failed} failed
      </span>
      {m.measurements.length > 0 && (
        <svg width={w} height={h} role="img" aria-label={`${m.name} measurements: ${m.measurements.map((x) => x.value || x.phase).join(', ')}`} className="sparkline">
          {points && <polyline points={points} fill="none" stroke="currentColor" strokeWidth={1.5} />}
          {m.measurements.map((mm, i) => (
            <circle key={i} cx={x(i)} cy={Number.isFinite(values[i]) ? y(values[i]) : h / 2} r={2.5} className={`mark mark-${mm.phase.toLowerCase()}`}>
              <title>
                {mm.phase}: {mm.value || mm.message}
              </title>
            </circle>
          ))}
        </svg>
      )}
    </div>
  );
}
