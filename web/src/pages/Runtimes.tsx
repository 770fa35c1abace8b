// GitOps runtimes (docs/runtimes.md): the list, one runtime's detail, registering a hybrid one
// (its token shown once, with the command that runs the agent), the account's hosted runtime,
// token rotation and uninstall.
import { useEffect, useState, type FormEvent } from 'react';
import { ApiError, fieldError } from '../api/client';
import { runtimes } from '../api/rest';
import type { RegisteredRuntime, Runtime } from '../api/types';
import { Link, navigate } from '../app/router';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { Dialog } from '../components/Dialog';
import { FormDialog } from '../components/FormDialog';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import { formatTime } from '../lib/format';
import { resourceNameError } from '../lib/pipelineRefs';
import { RUNTIMES_PATH, healthTone, heartbeatLabel, runtimeBadge, runtimeCommand, runtimePath } from '../lib/runtimes';
import { useResource } from '../lib/useResource';

/** Runtimes heartbeat every 5 s: look again as often. */
const POLL_MS = 5_000;

function usePoll(reload: (o?: { quiet?: boolean }) => void) {
  useEffect(() => {
    const t = setInterval(() => reload({ quiet: true }), POLL_MS);
    return () => clearInterval(t);
  }, [reload]);
}

export function RuntimeStatusBadge({ status }: { status: string }) {
  const b = runtimeBadge(status);
  return (
    <Badge tone={b.tone}>
      <span aria-hidden="true">{b.icon}</span> {b.label}
    </Badge>
  );
}

export default function Runtimes() {
  const me = useMe();
  const admin = me.role === 'admin';
  const list = useResource((signal) => runtimes.list(signal), []);
  usePoll(list.reload);
  const [adding, setAdding] = useState(false);
  const [hostedBusy, setHostedBusy] = useState(false);
  const [hostedError, setHostedError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const items = list.data?.items ?? [];

  const createHosted = async () => {
    setHostedBusy(true);
    setHostedError(undefined);
    try {
      const rt = await runtimes.createHosted();
      setDone(`Created hosted runtime ${rt.name}; it starts in a few seconds.`);
      list.reload();
    } catch (e) {
      // The server checks the name before the one-per-account rule: say which one applies.
      const existing = items.find((r) => r.type === 'hosted');
      setHostedError(
        e instanceof ApiError && e.status === 409 && existing
          ? new ApiError({ code: e.code, status: e.status, requestId: e.requestId, message: `The account already has a hosted runtime (one per account): ${existing.name}.` })
          : e,
      );
    } finally {
      setHostedBusy(false);
    }
  };

  return (
    <div data-page="runtimes">
      <PageHeader
        title="Runtimes"
        actions={
          admin && (
            <>
              <button type="button" className="button" onClick={createHosted} disabled={hostedBusy}>
                {hostedBusy ? 'Creating…' : 'Create hosted runtime'}
              </button>
              <button type="button" className="button button-primary" onClick={() => setAdding(true)}>
                Add runtime
              </button>
            </>
          )
        }
      >
        Runtimes run the GitOps engine (and, when hybrid, CI workflows) where your clusters are. They dial the control plane; it never dials in.
      </PageHeader>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {hostedError !== undefined && (
        <div data-testid="hosted-error">
          <ErrorNote error={hostedError} />
        </div>
      )}
      {list.error !== undefined && !list.data ? (
        <ErrorState error={list.error} onRetry={list.reload} />
      ) : !list.data ? (
        <LoadingRows rows={3} label="Loading runtimes" />
      ) : items.length === 0 ? (
        <EmptyState title="No runtimes" action={admin && <button type="button" className="button" onClick={() => setAdding(true)}>Add a runtime</button>}>
          <p>
            Add a hybrid runtime to run the agent in your own cluster or on a host with a kubeconfig: register it here (or with <code>freshet runtime register NAME</code>), then
            start it with <code>freshet runtime --server {window.location.origin} --token …</code>. Or create the account's hosted runtime, which Freshet runs for you (CD only).
          </p>
          {!admin && <p>Only admins can add runtimes.</p>}
        </EmptyState>
      ) : (
        <table className="table" aria-busy={list.loading}>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Type</th>
              <th scope="col">Access</th>
              <th scope="col">Status</th>
              <th scope="col">Version</th>
              <th scope="col">Clusters</th>
              <th scope="col">Last heartbeat</th>
            </tr>
          </thead>
          <tbody>
            {items.map((r) => (
              <tr key={r.id} data-testid={`runtime-${r.name}`}>
                <td className="strong">
                  <Link to={runtimePath(r.name)}>{r.name}</Link>
                </td>
                <td>{r.type}</td>
                <td>{r.accessMode}</td>
                <td data-testid="runtime-status">
                  <RuntimeStatusBadge status={r.status} />
                </td>
                <td className="muted">{r.version || '—'}</td>
                <td>{r.clusters?.length ? r.clusters.map((c) => c.name).join(', ') : <span className="muted">none</span>}</td>
                <td title={formatTime(r.lastHeartbeat)}>{heartbeatLabel(r.lastHeartbeat)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {adding && <AddRuntimeDialog onClose={() => setAdding(false)} onCreated={() => list.reload()} />}
    </div>
  );
}

/** The token of a runtime, shown once, with the command that starts its agent. */
function TokenShown({ rt, verb }: { rt: RegisteredRuntime; verb: string }) {
  const cmd = runtimeCommand(window.location.origin, rt.token);
  return (
    <>
      <p>
        This is the only time the token of <strong>{rt.name}</strong> is shown ({verb}): Freshet keeps only a hash. Run the runtime's agent where it can reach your clusters with:
      </p>
      <div className="secret-box">
        <code data-testid="runtime-command">{cmd}</code>
        <CopyButton text={cmd} label="Copy command" />
      </div>
      <p className="strong">Token</p>
      <div className="secret-box">
        <code data-testid="runtime-token">{rt.token}</code>
        <CopyButton text={rt.token} />
      </div>
      <p className="muted small">
        The token can also go in FRESHET_RUNTIME_TOKEN or a file (<code>--token-file</code>) instead of <code>--token</code>, to keep it out of the process list.
        {rt.accessMode === 'ingress' && ` In ingress mode, also pass --listen and --ingress-url ${rt.ingressUrl ?? ''} so clients reach the app-proxy.`}
      </p>
    </>
  );
}

function AddRuntimeDialog({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [mode, setMode] = useState<'tunnel' | 'ingress'>('tunnel');
  const [host, setHost] = useState('');
  const [local, setLocal] = useState<{ name?: string; host?: string }>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<RegisteredRuntime>();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = { name: resourceNameError(name, 'Name'), host: mode === 'ingress' && !host.trim() ? 'Ingress host is required in ingress mode.' : undefined };
    setLocal(errs);
    setError(undefined);
    if (errs.name || errs.host) return;
    setBusy(true);
    try {
      setCreated(await runtimes.register({ name, accessMode: mode, ...(mode === 'ingress' ? { ingressHost: host.trim() } : {}) }));
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  if (created) {
    return (
      <Dialog
        open
        title="Runtime registered"
        wide
        onClose={onClose}
        footer={
          <button type="button" className="button button-primary" onClick={onClose}>
            Done
          </button>
        }
      >
        <TokenShown rt={created} verb="registered" />
      </Dialog>
    );
  }
  return (
    <FormDialog
      title="Add runtime"
      wide
      onClose={onClose}
      busy={busy}
      formId="add-runtime"
      submitLabel="Register"
      busyLabel="Registering…"
      onSubmit={submit}
    >
      <p className="muted small">Registers a hybrid runtime and gives you its token and the command that runs its agent.</p>
      <Field label="Name" hint="Lowercase letters, digits and dashes, e.g. edge-1" error={local.name ?? fieldError(error, 'name')}>
        <input type="text" name="name" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" spellCheck={false} />
      </Field>
      <Field label="Access mode" hint={mode === 'tunnel' ? 'The runtime dials out; nothing needs to reach it.' : 'Clients reach the app-proxy at an ingress host.'}>
        <select name="accessMode" value={mode} onChange={(e) => setMode(e.target.value as 'tunnel' | 'ingress')}>
          <option value="tunnel">tunnel</option>
          <option value="ingress">ingress</option>
        </select>
      </Field>
      {mode === 'ingress' && (
        <Field label="Ingress host" hint="Host or https URL, e.g. runtime.example.com" error={local.host ?? fieldError(error, 'ingressHost')}>
          <input type="text" name="ingressHost" value={host} onChange={(e) => setHost(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
      )}
      {error !== undefined && !fieldError(error, 'name') && !fieldError(error, 'ingressHost') && <ErrorNote error={error} />}
    </FormDialog>
  );
}

export function RuntimeDetail({ params }: { params: Record<string, string> }) {
  const name = params.name;
  const me = useMe();
  const admin = me.role === 'admin';
  const rt = useResource((signal) => runtimes.get(name, signal), [name]);
  usePoll(rt.reload);
  const [rotating, setRotating] = useState(false);
  const [rotated, setRotated] = useState<RegisteredRuntime>();
  const [removing, setRemoving] = useState(false);
  const r = rt.data;

  return (
    <div data-page="runtime">
      <PageHeader
        title={name}
        actions={
          admin &&
          r && (
            <>
              {r.type === 'hybrid' && (
                <button type="button" className="button" onClick={() => setRotating(true)}>
                  Rotate token
                </button>
              )}
              <button type="button" className="button button-danger-quiet" onClick={() => setRemoving(true)}>
                Uninstall
              </button>
            </>
          )
        }
      >
        <Link to={RUNTIMES_PATH}>← Runtimes</Link>
      </PageHeader>
      {rt.error !== undefined && !r ? (
        <ErrorState error={rt.error} onRetry={rt.reload} />
      ) : !r ? (
        <LoadingRows rows={4} label="Loading runtime" />
      ) : (
        <div aria-busy={rt.loading}>
          <Facts r={r} />
          <h2 className="section-title">Components</h2>
          {r.components?.length ? (
            <table className="table" data-testid="runtime-components">
              <thead>
                <tr>
                  <th scope="col">Component</th>
                  <th scope="col">Health</th>
                  <th scope="col">Version</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {r.components.map((c) => (
                  <tr key={c.name}>
                    <td className="strong">{c.name}</td>
                    <td>
                      <Badge tone={healthTone(c.health)}>{c.health || 'unknown'}</Badge>
                    </td>
                    <td className="muted">{c.version || '—'}</td>
                    <td className="muted small">{c.message || '—'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p className="muted">No components reported yet: they appear with the first heartbeat.</p>
          )}
          <h2 className="section-title">Clusters</h2>
          {r.clusters?.length ? (
            <table className="table">
              <thead>
                <tr>
                  <th scope="col">Cluster</th>
                  <th scope="col">Server</th>
                  <th scope="col">Health</th>
                </tr>
              </thead>
              <tbody>
                {r.clusters.map((c) => (
                  <tr key={c.name}>
                    <td className="strong">{c.name}</td>
                    <td>
                      <code>{c.server}</code>
                    </td>
                    <td>{c.health ? <Badge tone={healthTone(c.health)}>{c.health}</Badge> : <span className="muted">—</span>}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          ) : (
            <p className="muted">No clusters yet.</p>
          )}
          <h2 className="section-title">Git sources</h2>
          {r.gitSources?.length ? (
            <ul>
              {r.gitSources.map((g) => (
                <li key={g}>
                  <code>{g}</code>
                </li>
              ))}
            </ul>
          ) : (
            <p className="muted">No git sources yet.</p>
          )}
        </div>
      )}
      <ConfirmDialog
        open={rotating}
        title="Rotate token"
        confirmLabel="Rotate token"
        onClose={() => setRotating(false)}
        onConfirm={async () => {
          setRotated(await runtimes.rotateToken(name));
          rt.reload();
        }}
      >
        <p>
          Give <strong>{name}</strong> a new token? The old one stops working at once: the running agent disconnects until it is restarted with the new token.
        </p>
      </ConfirmDialog>
      {rotated && (
        <Dialog
          open
          title="New runtime token"
          wide
          onClose={() => setRotated(undefined)}
          footer={
            <button type="button" className="button button-primary" onClick={() => setRotated(undefined)}>
              Done
            </button>
          }
        >
          <TokenShown rt={rotated} verb="rotated" />
        </Dialog>
      )}
      <ConfirmDialog
        open={removing}
        title="Uninstall runtime"
        confirmLabel="Uninstall"
        danger
        onClose={() => setRemoving(false)}
        onConfirm={async () => {
          await runtimes.remove(name);
          navigate(RUNTIMES_PATH);
        }}
      >
        <p>
          Uninstall <strong>{name}</strong>? It is deregistered and its token stops working{r?.type === 'hosted' ? '; the hosted runtime is stopped' : ''}. Applications it syncs are no longer kept in sync.
        </p>
      </ConfirmDialog>
    </div>
  );
}

function Facts({ r }: { r: Runtime }) {
  return (
    <dl className="facts" data-testid="runtime-facts">
      <div>
        <dt>Status</dt>
        <dd data-testid="runtime-detail-status">
          <RuntimeStatusBadge status={r.status} />
        </dd>
      </div>
      <div>
        <dt>Type</dt>
        <dd>{r.type}</dd>
      </div>
      <div>
        <dt>Access</dt>
        <dd>
          {r.accessMode}
          {r.ingressUrl ? ` · ${r.ingressUrl}` : ''}
        </dd>
      </div>
      <div>
        <dt>Version</dt>
        <dd>{r.version || '—'}</dd>
      </div>
      <div>
        <dt>Last heartbeat</dt>
        <dd title={formatTime(r.lastHeartbeat)}>{heartbeatLabel(r.lastHeartbeat)}</dd>
      </div>
      <div>
        <dt>Registered</dt>
        <dd>{formatTime(r.createdAt)}</dd>
      </div>
      <div>
        <dt>Capabilities</dt>
        <dd>{r.capabilities?.length ? <span className="chips">{r.capabilities.map((c) => <code key={c} className="chip">{c}</code>)}</span> : '—'}</dd>
      </div>
      {r.repo && (
        <div>
          <dt>Repository</dt>
          <dd>
            <code>{r.repo}</code>
          </dd>
        </div>
      )}
    </dl>
  );
}
