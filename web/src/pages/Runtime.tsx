// One runtime (/runtimes/NAME): what it last reported (status, type, access, version, heartbeat,
// components), and, live from its app-proxy (docs/appproxy.md), the clusters it deploys to and
// its Git Sources, falling back to its last heartbeat while the app-proxy cannot be reached.
// Admins rotate its token, uninstall it and remove clusters; members manage Git Sources.
import { useState, type FormEvent } from 'react';
import { ApiError, errorMessage } from '../api/client';
import { runtimeProxy, type ClusterRef, type GitSource } from '../api/gitops';
import { runtimes } from '../api/rest';
import type { RegisteredRuntime, Runtime } from '../api/types';
import { Link, navigate } from '../app/router';
import { useMe } from '../app/session';
import { owners } from '../api/governance';
import { OwnerPicker } from '../components/OwnerPicker';
import { Badge } from '../components/Badge';
import { CommandBox } from '../components/CommandBox';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog } from '../components/Dialog';
import { Field } from '../components/Field';
import { FormDialog } from '../components/FormDialog';
import { PageHeader } from '../components/PageHeader';
import { RowDangerButton } from '../components/RowDangerButton';
import { TokenShown } from '../components/RuntimeToken';
import { RuntimeStatusBadge } from '../components/RuntimeStatusBadge';
import { DataTable, ResourceTable, actionsColumn } from '../components/ResourceTable';
import { ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import { TokenRefusalBanner, tokenExpiry } from '../components/TokenRefusal';
import { VersionWithSkew } from '../components/VersionSkewBadge';
import { formatTime } from '../lib/format';
import { clusterAddCommand, emptyGitSourceForm, gitSourceBody, gitSourceErrors, gitSourceFieldOf, gitSourceForm, type GitSourceErrors, type GitSourceForm } from '../lib/gitops';
import { RUNTIMES_PATH, RUNTIME_POLL_MS, healthTone, heartbeatLabel } from '../lib/runtimes';
import { useResource } from '../lib/useResource';
import { useVisiblePoll } from '../lib/useVisiblePoll';

/** The app-proxy's lists change only when someone changes them: asked for less often. */
const PROXY_POLL_MS = 15_000;
/** The in-cluster destination: the runtime's own cluster, which cannot be removed. */
const IN_CLUSTER = 'in-cluster';

/**
 * Whether the runtime's app-proxy can answer through the control plane now: a connected runtime
 * in tunnel mode (in ingress mode it dials no tunnel; clients reach it at its ingress URL).
 */
function reachable(r: Runtime): boolean {
  return (r.status === 'healthy' || r.status === 'degraded') && r.accessMode !== 'ingress';
}

/** Why the app-proxy is not asked. */
function unreachableReason(r: Runtime): string {
  if (r.accessMode === 'ingress') return `its app-proxy is reached at its ingress URL${r.ingressUrl ? ` (${r.ingressUrl})` : ''} with an API key, not through this server.`;
  return `the runtime is ${r.status}, so its app-proxy cannot be asked.`;
}

/** /runtimes/:name; another runtime starts with a fresh page (no stale data). */
export default function RuntimePage({ params }: { params: Record<string, string> }) {
  return <RuntimeView key={params.name} name={params.name} />;
}

function RuntimeView({ name }: { name: string }) {
  const me = useMe();
  const admin = me.role === 'admin';
  const canWrite = me.role !== 'viewer';
  const rt = useResource((signal) => runtimes.get(name, signal), [name]);
  useVisiblePoll(rt.reload, RUNTIME_POLL_MS);
  const [rotating, setRotating] = useState(false);
  const [rotated, setRotated] = useState<RegisteredRuntime>();
  const [removing, setRemoving] = useState(false);
  const r = rt.data;

  return (
    <div data-page="runtime" data-status={r?.status}>
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
          <TokenRefusalBanner r={r} />
          <Facts r={r} admin={admin} onChanged={() => rt.reload()} />
          <h2 className="section-title">Components</h2>
          {r.components?.length ? (
            <DataTable
              testId="runtime-components"
              rows={r.components}
              rowKey={(c) => c.name}
              rowProps={(c) => ({ 'data-testid': `component-${c.name}` })}
              columns={[
                { header: 'Component', cellClassName: 'strong', cell: (c) => c.name },
                { header: 'Health', cell: (c) => <Badge tone={healthTone(c.health)}>{c.health || 'unknown'}</Badge> },
                { header: 'Version', cellClassName: 'muted', cell: (c) => c.version || '—' },
                { header: 'Message', cellClassName: 'muted small', cell: (c) => c.message || '—' },
              ]}
            />
          ) : (
            <p className="muted">No components reported yet: they appear with the first heartbeat.</p>
          )}
          <Clusters r={r} admin={admin} />
          <GitSources r={r} canWrite={canWrite} />
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
          {r?.type === 'hybrid' && (
            <>
              {' '}
              What it runs in its cluster stays there: <code>freshet runtime uninstall {name}</code> removes that too.
            </>
          )}
        </p>
      </ConfirmDialog>
    </div>
  );
}

function Facts({ r, admin, onChanged }: { r: Runtime; admin: boolean; onChanged: () => void }) {
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
        <dd><VersionWithSkew version={r.version} skew={r.versionSkew} /></dd>
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
        <dt>Token expires</dt>
        <dd data-testid="runtime-token-expires">{tokenExpiry(r)}</dd>
      </div>
      <div>
        <dt>Owner</dt>
        <dd>
          <OwnerPicker
            what={`runtime ${r.name}`}
            owner={r.ownerTeam}
            cannot={admin ? undefined : 'only admins can change it'}
            save={(team) => owners.setRuntime(r.name, team)}
            onSaved={onChanged}
          />
        </dd>
      </div>
      <div>
        <dt>Capabilities</dt>
        <dd>{r.capabilities?.length ? <span className="chips">{r.capabilities.map((c) => <code key={c} className="chip">{c}</code>)}</span> : '—'}</dd>
      </div>
      {r.repo && (
        <div>
          <dt>Repository</dt>
          <dd className="ellipsis" title={r.repo}>
            <code>{r.repo}</code>
          </dd>
        </div>
      )}
    </dl>
  );
}

/** Why a section shows the last heartbeat instead of the app-proxy's answer. */
function StaleNote({ r, error, what }: { r: Runtime; error: unknown; what: string }) {
  return (
    <p className="muted small" data-testid="from-heartbeat">
      {what} as of the last heartbeat ({heartbeatLabel(r.lastHeartbeat)}):{' '}
      {reachable(r) ? `the app-proxy did not answer (${errorMessage(error)}).` : unreachableReason(r)}
    </p>
  );
}

// ─── Clusters ───

/** A cluster as the list shows it: from the app-proxy, with its health from the heartbeat. */
type ClusterRow = { name: string; server: string; health?: string };

function Clusters({ r, admin }: { r: Runtime; admin: boolean }) {
  const live = reachable(r);
  const list = useResource((signal) => (live ? runtimeProxy.clusters(r.name, signal) : Promise.resolve(undefined)), [r.name, live]);
  useVisiblePoll(list.reload, PROXY_POLL_MS, live);
  const [removing, setRemoving] = useState<ClusterRef>();
  const [done, setDone] = useState<string>();
  const fromProxy = live && list.data !== undefined;
  const fallback = !live || (list.error !== undefined && !list.data);
  // The heartbeat carries each cluster's health; the app-proxy the current list.
  const health = new Map((r.clusters ?? []).map((c) => [c.name, c.health]));
  const items: ClusterRow[] = fromProxy ? list.data!.items.map((c) => ({ ...c, health: health.get(c.name) })) : (r.clusters ?? []);
  const cmd = clusterAddCommand(r.name);

  return (
    <section aria-labelledby="rt-clusters" data-testid="runtime-clusters" data-source={fromProxy ? 'app-proxy' : fallback ? 'heartbeat' : undefined}>
      <h2 className="section-title" id="rt-clusters">
        Clusters
      </h2>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {fallback && <StaleNote r={r} error={list.error} what="Clusters" />}
      {!fallback && !fromProxy ? (
        <LoadingRows rows={2} label="Loading clusters" />
      ) : items.length === 0 ? (
        <p className="muted">No clusters yet.</p>
      ) : (
        <DataTable
          busy={list.loading}
          rows={items}
          rowKey={(c) => c.name}
          rowProps={(c) => ({ 'data-testid': `cluster-${c.name}` })}
          columns={[
            { header: 'Cluster', cellClassName: 'strong', cell: (c) => <>{c.name}{c.name === IN_CLUSTER && <span className="muted small"> · the runtime's own</span>}</> },
            { header: 'Server', cell: (c) => <code>{c.server}</code> },
            { header: 'Health', cell: (c) => (c.health ? <Badge tone={healthTone(c.health)}>{c.health}</Badge> : <span className="muted">—</span>) },
            actionsColumn((c: ClusterRow) => admin && fromProxy && c.name !== IN_CLUSTER && <RowDangerButton label="Remove" ariaLabel={`Remove cluster ${c.name}`} onClick={() => setRemoving(c)} />),
          ]}
        />
      )}
      <p className="muted small">
        Adding a cluster needs its kubeconfig, which stays on your machine: run this with the freshet CLI where kubectl reaches it (admins). It creates a service account there and hands its token
        to this runtime alone; applications then deploy to it with <code>destination.name: NAME</code>.
      </p>
      <CommandBox text={cmd} testId="cluster-add-command" />
      <ConfirmDialog
        open={!!removing}
        title="Remove cluster"
        confirmLabel="Remove cluster"
        danger
        onClose={() => setRemoving(undefined)}
        onConfirm={async () => {
          if (!removing) return;
          await runtimeProxy.removeCluster(r.name, removing.name);
          setDone(`${r.name} no longer deploys to ${removing.name}.`);
          list.reload({ quiet: true });
        }}
      >
        <p>
          Make <strong>{r.name}</strong> forget the cluster <strong>{removing?.name}</strong>? It deletes its credential; applications that deploy there stop syncing. The service account stays in the
          cluster: <code>freshet cluster remove {removing?.name} --runtime {r.name} --context CTX</code> deletes it too.
        </p>
      </ConfirmDialog>
    </section>
  );
}

// ─── Git Sources ───

/** Which files of the directory a Git Source loads. */
function gitSourceFiles(g: GitSource) {
  return (
    <>
      {g.spec.include ? <code>{g.spec.include}</code> : <span className="muted">all</span>}
      {g.spec.exclude && (
        <span className="muted">
          {' '}
          except <code>{g.spec.exclude}</code>
        </span>
      )}
    </>
  );
}

/** Where a Git Source's applications deploy when they do not say. */
function gitSourceDestination(g: GitSource) {
  const d = g.spec.destination;
  if (!d || !(d.name || d.server || d.namespace)) return <span className="muted">none</span>;
  return (
    <>
      {d.name || d.server || <span className="muted">—</span>}
      {d.namespace && <span className="muted"> / {d.namespace}</span>}
    </>
  );
}

function GitSources({ r, canWrite }: { r: Runtime; canWrite: boolean }) {
  const live = reachable(r);
  const list = useResource((signal) => (live ? runtimeProxy.gitSources(r.name, signal) : Promise.resolve(undefined)), [r.name, live]);
  useVisiblePoll(list.reload, PROXY_POLL_MS, live);
  const [editing, setEditing] = useState<GitSource | 'new'>();
  const [deleting, setDeleting] = useState<GitSource>();
  const [done, setDone] = useState<string>();
  const fromProxy = live && list.data !== undefined;
  const fallback = !live || (list.error !== undefined && !list.data);
  const names = r.gitSources ?? [];

  return (
    <section aria-labelledby="rt-git-sources" data-testid="runtime-git-sources">
      <div className="section-row">
        <h2 className="section-title" id="rt-git-sources">
          Git Sources
        </h2>
        {canWrite && fromProxy && (
          <button type="button" className="button" onClick={() => setEditing('new')}>
            Add Git Source
          </button>
        )}
      </div>
      <p className="muted small">A Git Source is a directory of another repository whose Applications (and AppProjects) this runtime loads and keeps in sync: app-of-apps.</p>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {fallback ? (
        <>
          <StaleNote r={r} error={list.error} what="Git Sources" />
          {names.length ? (
            <ul className="plain-list">
              {names.map((g) => (
                <li key={g}>
                  <code>{g}</code>
                </li>
              ))}
            </ul>
          ) : (
            <p className="muted">No Git Sources.</p>
          )}
        </>
      ) : (
        // An error the app-proxy gives is the note above, with the heartbeat's names.
        <ResourceTable
          list={{ ...list, error: undefined }}
          placeholder={{ label: 'Loading Git Sources', rows: 2 }}
          empty={{
            title: 'No Git Sources',
            body: (
              <>
                Point the runtime at a directory of Application files in any repository it can read, e.g. <code>prod/</code> of your apps repository.
              </>
            ),
            action: canWrite && <button type="button" className="button" onClick={() => setEditing('new')}>Add a Git Source</button>,
          }}
          rowKey={(g) => g.metadata.name}
          rowProps={(g) => ({ 'data-testid': `git-source-${g.metadata.name}` })}
          columns={[
            { header: 'Name', cellClassName: 'strong', cell: (g) => g.metadata.name },
            {
              header: 'Repository',
              cellClassName: 'ellipsis-cell',
              cellProps: (g) => ({ title: g.spec.repoURL }),
              cell: (g) => (
                <>
                  <code>{g.spec.repoURL}</code>
                  {g.spec.path && <span className="muted"> · {g.spec.path}</span>}
                </>
              ),
            },
            { header: 'Revision', cell: (g) => g.spec.targetRevision || <span className="muted">HEAD</span> },
            { header: 'Files', cellClassName: 'small', cell: gitSourceFiles },
            { header: 'Default destination', cellClassName: 'small', cell: gitSourceDestination },
            actionsColumn(
              (g: GitSource) =>
                canWrite && (
                  <>
                    <button type="button" className="button button-small" onClick={() => setEditing(g)} aria-label={`Edit Git Source ${g.metadata.name}`}>
                      Edit
                    </button>{' '}
                    <RowDangerButton label="Delete" ariaLabel={`Delete Git Source ${g.metadata.name}`} onClick={() => setDeleting(g)} />
                  </>
                ),
              'actions-col nowrap',
            ),
          ]}
        />
      )}
      {editing && (
        <GitSourceDialog
          runtime={r.name}
          existing={editing === 'new' ? undefined : editing}
          onClose={() => setEditing(undefined)}
          onSaved={(g, created) => {
            setEditing(undefined);
            setDone(`${created ? 'Added' : 'Saved'} Git Source ${g.metadata.name}: committed to the installation repository.`);
            list.reload({ quiet: true });
          }}
        />
      )}
      <ConfirmDialog
        open={!!deleting}
        title="Delete Git Source"
        confirmLabel="Delete Git Source"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await runtimeProxy.removeGitSource(r.name, deleting.metadata.name);
          setDone(`Deleted Git Source ${deleting.metadata.name}.`);
          list.reload({ quiet: true });
        }}
      >
        <p>
          Delete the Git Source <strong>{deleting?.metadata.name}</strong>? The runtime stops loading <code>{deleting?.spec.repoURL}</code>
          {deleting?.spec.path ? ` (${deleting.spec.path})` : ''}, and the applications it defines are removed; their resources stay in the cluster unless an application has Argo CD's resources
          finalizer.
        </p>
      </ConfirmDialog>
    </section>
  );
}

/**
 * Create a Git Source (its repository URL given from Settings → Git integrations), or edit one
 * (the name stays; the runtime replaces it with upsert).
 */
export function GitSourceDialog({
  runtime,
  existing,
  initialRepoURL,
  onClose,
  onSaved,
}: {
  runtime: string;
  existing?: GitSource;
  initialRepoURL?: string;
  onClose: () => void;
  onSaved: (g: GitSource, created: boolean) => void;
}) {
  const [f, setF] = useState<GitSourceForm>(() => (existing ? gitSourceForm(existing) : { ...emptyGitSourceForm(), repoURL: initialRepoURL ?? '' }));
  const [local, setLocal] = useState<GitSourceErrors>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const set = (k: keyof GitSourceForm) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const serverField = error instanceof ApiError ? gitSourceFieldOf(error.field) : undefined;
  const err = (k: keyof GitSourceForm) => local[k] ?? (serverField === k ? errorMessage(error) : undefined);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = gitSourceErrors(f);
    setLocal(errs);
    setError(undefined);
    if (Object.keys(errs).length) return;
    setBusy(true);
    try {
      const g = await runtimeProxy.putGitSource(runtime, gitSourceBody(f), !!existing);
      onSaved(g ?? gitSourceBody(f), !existing);
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };

  return (
    <FormDialog
      title={existing ? `Edit Git Source ${existing.metadata.name}` : 'Add Git Source'}
      wide
      onClose={onClose}
      busy={busy}
      formId="git-source"
      submitLabel={existing ? 'Save' : 'Add Git Source'}
      busyLabel="Committing…"
      onSubmit={submit}
    >
      <p className="muted small">Saved as git-sources/NAME.yaml in {runtime}'s installation repository (a commit); the runtime then loads the applications it finds.</p>
      <div className="form-row">
        <Field label="Name" hint="Lowercase letters, digits and '-', e.g. prod-apps" error={err('name')}>
          <input type="text" name="name" value={f.name} onChange={set('name')} disabled={!!existing} autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Revision" hint="Branch, tag or commit; empty for the repository's HEAD" error={err('targetRevision')}>
          <input type="text" name="targetRevision" value={f.targetRevision} onChange={set('targetRevision')} placeholder="main" autoComplete="off" spellCheck={false} />
        </Field>
      </div>
      <Field label="Repository URL" hint="https://, ssh:// or git@host:owner/repo.git — a repository the runtime can read" error={err('repoURL')}>
        <input type="text" name="repoURL" value={f.repoURL} onChange={set('repoURL')} placeholder="https://github.com/acme/apps.git" autoComplete="off" spellCheck={false} />
      </Field>
      <div className="form-row">
        <Field label="Path" hint="Directory of Application files; empty for the root" error={err('path')}>
          <input type="text" name="path" value={f.path} onChange={set('path')} placeholder="prod" autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Include" hint="Glob relative to the path, e.g. *.yaml" error={err('include')}>
          <input type="text" name="include" value={f.include} onChange={set('include')} autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Exclude" hint="Glob, e.g. drafts/*" error={err('exclude')}>
          <input type="text" name="exclude" value={f.exclude} onChange={set('exclude')} autoComplete="off" spellCheck={false} />
        </Field>
      </div>
      <fieldset className="check-list">
        <legend>
          Default destination <span className="muted small">for the applications of this source that name none</span>
        </legend>
        <div className="form-row">
          <Field label="Cluster by">
            <select name="destinationBy" value={f.destinationBy} onChange={(e) => setF({ ...f, destinationBy: e.target.value as 'name' | 'server' })}>
              <option value="name">name</option>
              <option value="server">server URL</option>
            </select>
          </Field>
          <Field label={f.destinationBy === 'name' ? 'Cluster name' : 'API server URL'} hint={f.destinationBy === 'name' ? 'e.g. in-cluster' : 'e.g. https://kubernetes.default.svc'} error={err('destination')}>
            <input type="text" name="destination" value={f.destination} onChange={set('destination')} autoComplete="off" spellCheck={false} />
          </Field>
          <Field label="Namespace" error={err('namespace')}>
            <input type="text" name="namespace" value={f.namespace} onChange={set('namespace')} autoComplete="off" spellCheck={false} />
          </Field>
        </div>
      </fieldset>
      {error !== undefined && !serverField && <ErrorNote error={error} />}
    </FormDialog>
  );
}
