// One application, live from its runtime's app-proxy (docs/appproxy.md): status, source and
// destination; sync (prune, dry run, chosen resources), refresh, rollback and delete; and its
// resource tree, diff, history, conditions and resources, each a tab with its own URL
// (?tab=tree|diff|history|conditions|resources). Polled every few seconds while visible.
import { useEffect, useMemo, useState, type FormEvent, type ReactNode } from 'react';
import { deployments as deploymentsApi } from '../api/analytics';
import { appProxy, type HistoryEntry, type ProxyApplication, type ResourceDiff, type ResourceStatus, type SourceLocation, type SyncResult, type TreeNode } from '../api/apps';
import { Link, href, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { HealthBadge, PhaseBadge, SyncBadge } from '../components/AppStatus';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog } from '../components/Dialog';
import { DiffLines } from '../components/DiffLines';
import { ResourceGraph } from '../components/ResourceGraph';
import { ResourcePanel } from '../components/ResourcePanel';
import { Field } from '../components/Field';
import { FormDialog } from '../components/FormDialog';
import { Menu } from '../components/Menu';
import { DeploymentTimeline } from '../components/DeploymentTimeline';
import { RolloutsPanel } from '../components/RolloutsPanel';
import { DataTable } from '../components/ResourceTable';
import { AppProblems } from '../components/AppProblems';
import { EmptyState, ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import { Tabs } from '../components/Tabs';
import { flattenTree, kindCounts, mergeTree, type TreeRow } from '../lib/appTree';
import { layoutGraph, networkGraph, treeGraph, type PlacedNode } from '../lib/appGraph';
import {
  APPLICATIONS_PATH,
  appPath,
  autoSyncLabel,
  destinationLabel,
  healthBadge,
  isZeroTime,
  locationLabel,
  phaseTone,
  resourceId,
  resourceLabel,
  resultTone,
  subject,
} from '../lib/apps';
import { formatDuration, shortSha } from '../lib/builds';
import { DIFF_MODES, differing, diffModeFrom, diffStats, parseUnifiedDiff, type DiffMode } from '../lib/diff';
import { PRUNE_POLICIES, SYNC_OPTION_CHOICES, syncOptionStrings, type PrunePolicy } from '../lib/syncOptions';
import { formatTime, plural, relativeTime } from '../lib/format';
import { runtimePath } from '../lib/runtimes';
import { useResource } from '../lib/useResource';
import { useVisiblePoll } from '../lib/useVisiblePoll';

/** How often the application is asked for while the page is visible. */
const POLL_MS = 3000;
/** The tree changes as Pods come and go: asked for again this often on its tab. */
const TREE_POLL_MS = 5000;

type Tab = 'tree' | 'diff' | 'history' | 'deployments' | 'rollouts' | 'conditions' | 'resources';
const TABS: Tab[] = ['tree', 'diff', 'history', 'deployments', 'rollouts', 'conditions', 'resources'];

function useTab(): [Tab, (t: Tab) => void] {
  const { search, pathname } = useLocation();
  const t = new URLSearchParams(search).get('tab') as Tab | null;
  const tab = t && TABS.includes(t) ? t : 'tree';
  const set = (next: Tab) => {
    const q = Object.fromEntries(new URLSearchParams(window.location.search));
    navigate(href(pathname, { ...q, tab: next === 'tree' ? undefined : next }), { replace: true });
  };
  return [tab, set];
}

/** /applications/:runtime/:name; a new application starts with a fresh page (no stale data). */
export default function Application({ params }: { params: Record<string, string> }) {
  return <ApplicationPage key={`${params.runtime}/${params.name}`} runtime={params.runtime} name={params.name} />;
}

function ApplicationPage({ runtime, name }: { runtime: string; name: string }) {
  const me = useMe();
  const canWrite = me.role !== 'viewer';
  const app = useResource((signal) => appProxy.get(runtime, name, signal), [runtime, name]);
  useVisiblePoll(app.reload, POLL_MS);
  const [tab, setTab] = useTab();
  const [note, setNote] = useState<string>();
  const a = app.data;
  const sync = a?.status.sync;
  const health = a?.status.health?.status;
  useEffect(() => {
    if (sync) document.title = `${name} · ${sync} · ${health ?? 'Unknown'} · Freshet`;
  }, [name, sync, health]);

  if (app.error !== undefined && !a) {
    return (
      <div data-page="application">
        <Breadcrumbs runtime={runtime} />
        <h1>{name}</h1>
        <ErrorState error={app.error} onRetry={app.reload} />
      </div>
    );
  }
  if (!a) {
    return (
      <div data-page="application" aria-busy="true">
        <Breadcrumbs runtime={runtime} />
        <h1>{name}</h1>
        <LoadingRows rows={4} label="Loading application" />
      </div>
    );
  }
  const st = a.status;
  const conditions = st.conditions ?? [];
  const resources = st.resources ?? [];
  const outOfSync = resources.filter((r) => r.status !== 'Synced').length;
  const tabs: { id: Tab; label: ReactNode }[] = [
    { id: 'tree', label: 'Tree' },
    { id: 'diff', label: <>Diff{outOfSync > 0 && <span className="tab-count">{outOfSync}</span>}</> },
    { id: 'history', label: 'History' },
    { id: 'deployments', label: 'Deployments' },
    { id: 'rollouts', label: 'Rollouts' },
    { id: 'conditions', label: <>Conditions{conditions.length > 0 && <span className="tab-count tab-count-warn">{conditions.length}</span>}</> },
    { id: 'resources', label: <>Resources<span className="tab-count">{resources.length}</span></> },
  ];
  const changed = (msg?: string) => {
    if (msg) setNote(msg);
    app.reload({ quiet: true });
  };

  return (
    <div data-page="application" data-sync={st.sync} data-health={st.health?.status}>
      <AppHeader a={a} runtime={runtime} canWrite={canWrite} onChanged={changed} />
      <Flash text={note} onDone={() => setNote(undefined)} />
      <AppProblems conditions={conditions} />
      <Tabs label="Application sections" tab={tab} onChange={setTab} tabs={tabs} />
      <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="tab-panel" data-testid={`app-panel-${tab}`}>
        {tab === 'tree' && <TreePanel runtime={runtime} a={a} canWrite={canWrite} onChanged={changed} />}
        {tab === 'diff' && <DiffPanel runtime={runtime} a={a} />}
        {tab === 'history' && <HistoryPanel runtime={runtime} a={a} canWrite={canWrite} onChanged={changed} />}
        {tab === 'deployments' && <DeploymentsPanel runtime={runtime} app={a.name} />}
        {tab === 'rollouts' && <RolloutsPanel runtime={runtime} app={a.name} canWrite={canWrite} />}
        {tab === 'conditions' && <ConditionsPanel a={a} />}
        {tab === 'resources' && <ResourcesPanel resources={resources} />}
      </div>
    </div>
  );
}

/** The application's deployment records with what each shipped (analytics, not the app-proxy). */
function DeploymentsPanel({ runtime, app }: { runtime: string; app: string }) {
  const list = useResource((signal) => deploymentsApi.list({ app, runtime, since: '366d' }, { limit: 50 }, signal), [runtime, app]);
  if (list.error !== undefined) return <ErrorState error={list.error} onRetry={() => list.reload()} />;
  if (!list.data) return <LoadingRows rows={3} label="Loading deployments" />;
  const items = list.data.items;
  return (
    <div data-testid="app-deployments">
      <p className="muted small inline-links">
        Each sync that reached the cluster, newest first, with the images it deployed and the commits and issues they were built from.{' '}
        <Link to={href('/deployments', { app, runtime })}>All deployments of {app} →</Link> · <Link to={href('/dora', { app, runtime })}>DORA metrics →</Link>
      </p>
      {items.length === 0 ? <EmptyState title="No deployments recorded">A deployment is recorded when a sync of this application finishes.</EmptyState> : <DeploymentTimeline items={items} showApp={false} />}
    </div>
  );
}

function Breadcrumbs({ runtime }: { runtime: string }) {
  return (
    <p className="breadcrumbs small">
      <Link to={APPLICATIONS_PATH}>Applications</Link>
      {' / '}
      <Link to={href(APPLICATIONS_PATH, { runtime })}>{runtime}</Link>
    </p>
  );
}


// ─── Header: status, facts and actions ───

function AppHeader({ a, runtime, canWrite, onChanged }: { a: ProxyApplication; runtime: string; canWrite: boolean; onChanged: (msg?: string) => void }) {
  const st = a.status;
  const spec = a.spec?.spec;
  const src = spec?.source ?? spec?.sources?.[0];
  const auto = spec?.syncPolicy?.automated;
  const automated = !!auto && auto.enabled !== false;
  const op = st.operation;
  const running = op?.phase === 'Running';
  const [syncing, setSyncing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const [busy, setBusy] = useState<string>();
  const [error, setError] = useState<unknown>();

  const refresh = async (hard: boolean) => {
    setBusy(hard ? 'hard' : 'refresh');
    setError(undefined);
    try {
      await appProxy.refresh(runtime, a.name, hard);
      onChanged(hard ? 'Hard refresh done: manifests rendered again and compared with the cluster.' : 'Refreshed: compared with git and the cluster.');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(undefined);
    }
  };
  const terminate = async () => {
    setBusy('terminate');
    setError(undefined);
    try {
      const r = await appProxy.terminate(runtime, a.name);
      onChanged(r.terminated ? 'The running sync was told to stop.' : 'No sync was running.');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(undefined);
    }
  };

  const reenable = async () => {
    setBusy('autosync');
    setError(undefined);
    try {
      await appProxy.setAutoSync(runtime, a.name, true);
      onChanged(automated ? 'Auto-sync is on again: the application follows git from the next poll.' : 'The rollback no longer holds auto-sync off.');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(undefined);
    }
  };

  return (
    <header className="app-header">
      <div className="page-header">
        <div>
          <Breadcrumbs runtime={runtime} />
          <h1 className="build-title">
            <span>{a.name}</span> <SyncBadge status={st.sync} /> <HealthBadge status={st.health?.status} message={st.health?.message} />
          </h1>
          {st.health?.message && st.health.status !== 'Healthy' && <p className="muted page-description">{st.health.message}</p>}
        </div>
        <div className="page-actions">
          {running && (
            <button type="button" className="button button-danger-quiet" onClick={terminate} disabled={!canWrite || !!busy}>
              {busy === 'terminate' ? 'Stopping…' : 'Terminate sync'}
            </button>
          )}
          <Menu
            label={busy === 'refresh' || busy === 'hard' ? 'Refreshing…' : 'Refresh ▾'}
            ariaLabel="Refresh"
            buttonClass="button"
            items={[
              { key: 'refresh', label: 'Refresh: compare with git and the cluster now', onSelect: () => refresh(false), disabled: !canWrite || !!busy },
              { key: 'hard', label: 'Hard refresh: also render the manifests again', onSelect: () => refresh(true), disabled: !canWrite || !!busy },
            ]}
          />
          <button type="button" className="button button-danger-quiet" onClick={() => setDeleting(true)} disabled={!canWrite}>
            Delete
          </button>
          <button type="button" className="button button-primary" onClick={() => setSyncing(true)} disabled={!canWrite || running}>
            Sync
          </button>
        </div>
      </div>
      {!canWrite && <p className="muted small">Your role (viewer) can look but not sync, refresh, roll back or delete.</p>}
      {error !== undefined && <ErrorNote error={error} />}
      {st.autoSyncDisabled && (
        <div className="notice notice-warning" role="status" data-testid="autosync-disabled">
          <span>
            <strong>Auto-sync is off:</strong> a rollback switched it off so that the next poll does not sync the application back to git. Sync by hand to return to git, or switch
            auto-sync back on.
          </span>
          {canWrite && (
            <button type="button" className="button button-small" onClick={reenable} disabled={!!busy}>
              {busy === 'autosync' ? 'Switching on…' : 'Re-enable auto-sync'}
            </button>
          )}
        </div>
      )}
      <dl className="facts" data-testid="app-facts">
        <div>
          <dt>Repository</dt>
          <dd className="ellipsis" title={src?.repoURL}>
            {src ? <code>{src.repoURL}</code> : <span className="muted">none</span>}
            {src?.path && <span className="muted"> · {src.path}</span>}
            {src?.chart && <span className="muted"> · chart {src.chart}</span>}
          </dd>
        </div>
        <div>
          <dt>Target</dt>
          <dd>{st.targetRevision || src?.targetRevision || 'HEAD'}</dd>
        </div>
        <div>
          <dt>Revision</dt>
          <dd className="ellipsis" title={[st.revision, st.commit?.author, st.commit?.message].filter(Boolean).join(' · ')}>
            {st.revision ? <code>{shortSha(st.revision)}</code> : <span className="muted">not resolved</span>}
            {st.commit && (
              <span>
                {' '}
                {subject(st.commit.message)} <span className="muted">by {st.commit.author}</span>
              </span>
            )}
          </dd>
        </div>
        <div>
          <dt>Destination</dt>
          <dd title={[spec?.destination.server ?? spec?.destination.name, spec?.destination.namespace].filter(Boolean).join(' ')}>{spec ? destinationLabel(spec.destination) : '—'}</dd>
        </div>
        {a.owner && (
          <div>
            <dt>Owner</dt>
            <dd data-testid="app-owner">
              {a.ownerKind === 'ApplicationSet' ? (
                <span title={a.file}>
                  ApplicationSet <strong>{a.owner}</strong> <span className="muted">· generated by it</span>
                </span>
              ) : (
                <span>
                  <Link to={appPath(runtime, a.owner)}>{a.owner}</Link> <span className="muted">· app of apps</span>
                </span>
              )}
            </dd>
          </div>
        )}
        <div>
          <dt>Project</dt>
          <dd>{st.project || spec?.project || 'default'}</dd>
        </div>
        <div>
          <dt>Auto-sync</dt>
          <dd data-testid="app-autosync">{autoSyncLabel({ autoSync: automated, autoSyncDisabled: !!st.autoSyncDisabled, prune: auto?.prune, selfHeal: auto?.selfHeal })}</dd>
        </div>
        <div>
          <dt>Runtime</dt>
          <dd>
            <Link to={runtimePath(runtime)}>{runtime}</Link>
          </dd>
        </div>
        <div>
          <dt>Reconciled</dt>
          <dd title={formatTime(st.reconciledAt)}>{isZeroTime(st.reconciledAt) ? 'not yet' : relativeTime(st.reconciledAt)}</dd>
        </div>
        {st.sourceType && (
          <div>
            <dt>Type</dt>
            <dd>{st.sourceType}</dd>
          </div>
        )}
        {op && (
          <div>
            <dt>Last sync</dt>
            <dd className="ellipsis" title={op.message}>
              <PhaseBadge phase={op.phase} title={op.message} /> {op.revision && <code>{shortSha(op.revision)}</code>}{' '}
              <span className="muted">{op.dryRun ? 'dry run · ' : ''}by {op.initiatedBy} · </span>
              <span title={formatTime(op.startedAt)}>{relativeTime(op.startedAt)}</span>
            </dd>
          </div>
        )}
      </dl>
      {syncing && <SyncDialog a={a} runtime={runtime} onClose={() => setSyncing(false)} onSynced={() => onChanged()} />}
      <DeleteDialog open={deleting} a={a} runtime={runtime} onClose={() => setDeleting(false)} />
    </header>
  );
}

// ─── Sync ───

function SyncDialog({ a, runtime, onClose, onSynced }: { a: ProxyApplication; runtime: string; onClose: () => void; onSynced: () => void }) {
  const resources = a.status.resources ?? [];
  const [revision, setRevision] = useState('');
  const [prune, setPrune] = useState(false);
  const [dryRun, setDryRun] = useState(false);
  const [options, setOptions] = useState<Set<string>>(() => new Set());
  const [prunePolicy, setPrunePolicy] = useState<PrunePolicy>('foreground');
  const [some, setSome] = useState(false);
  const [picked, setPicked] = useState<Set<string>>(() => new Set());
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [pickError, setPickError] = useState<string>();
  const [result, setResult] = useState<SyncResult>();
  const target = a.status.targetRevision || a.spec?.spec.source?.targetRevision || 'HEAD';
  const count = some ? picked.size : resources.length;
  const prunable = resources.filter((r) => r.requiresPruning).length;

  const toggle = (id: string) =>
    setPicked((p) => {
      const n = new Set(p);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (some && picked.size === 0) {
      setPickError('Choose at least one resource, or sync all of them.');
      return;
    }
    setPickError(undefined);
    setBusy(true);
    setError(undefined);
    try {
      const chosen = syncOptionStrings(options, prunePolicy);
      const res = await appProxy.sync(runtime, a.name, {
        revision: revision.trim() || undefined,
        prune,
        dryRun,
        resources: some ? [...picked] : undefined,
        options: chosen.length > 0 ? chosen : undefined,
      });
      setResult(res);
      onSynced();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (result) {
    return (
      <Dialog
        open
        wide
        title={result.dryRun ? 'Dry run finished' : 'Sync finished'}
        onClose={onClose}
        footer={
          <button type="button" className="button button-primary" onClick={onClose}>
            Done
          </button>
        }
      >
        <SyncResultView r={result} />
      </Dialog>
    );
  }
  return (
    <FormDialog title={`Sync ${a.name}`} wide onClose={onClose} busy={busy} formId="sync-app" submitLabel={dryRun ? 'Dry run' : 'Sync'} busyLabel="Syncing…" onSubmit={submit}>
      <Field label="Revision" hint={`Empty: the target revision (${target}). A branch, tag or commit SHA syncs to that instead, once.`} >
        <input type="text" name="revision" value={revision} onChange={(e) => setRevision(e.target.value)} placeholder={target} autoComplete="off" spellCheck={false} />
      </Field>
      <div className="check-list">
        <label className="check">
          <input type="checkbox" name="prune" checked={prune} onChange={(e) => setPrune(e.target.checked)} /> Prune: delete live resources that git no longer has
          {prunable > 0 && <span className="muted"> ({plural(prunable, 'resource')} would be deleted)</span>}
        </label>
        <label className="check">
          <input type="checkbox" name="dryRun" checked={dryRun} onChange={(e) => setDryRun(e.target.checked)} /> Dry run: show what would change, change nothing
        </label>
      </div>
      <fieldset className="check-list" data-testid="sync-options">
        <legend>Sync options</legend>
        {SYNC_OPTION_CHOICES.map((c) => (
          <label key={c.key} className="check">
            <input
              type="checkbox"
              name={`option-${c.key}`}
              checked={options.has(c.key)}
              onChange={(e) =>
                setOptions((o) => {
                  const n = new Set(o);
                  if (e.target.checked) n.add(c.key);
                  else n.delete(c.key);
                  return n;
                })
              }
            />{' '}
            {c.label}: <span className="muted">{c.hint}</span>
          </label>
        ))}
        <Field label="Prune propagation policy" hint="How pruned objects' dependents are deleted.">
          <select name="prunePropagationPolicy" value={prunePolicy} onChange={(e) => setPrunePolicy(e.target.value as PrunePolicy)}>
            {PRUNE_POLICIES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </Field>
      </fieldset>
      <fieldset className="radio-row radio-field">
        <legend>Resources</legend>
        <label className="radio">
          <input type="radio" name="scope" checked={!some} onChange={() => setSome(false)} /> All {plural(resources.length, 'resource')}
        </label>
        <label className="radio">
          <input type="radio" name="scope" checked={some} onChange={() => setSome(true)} disabled={resources.length === 0} /> Only those I choose
        </label>
      </fieldset>
      {some && (
        <div className="sync-pick" role="group" aria-label="Resources to sync">
          <div className="sync-pick-tools">
            <button type="button" className="link-button small" onClick={() => setPicked(new Set(resources.filter((r) => r.status !== 'Synced').map(resourceId)))}>
              Out of sync only
            </button>
            <button type="button" className="link-button small" onClick={() => setPicked(new Set(resources.map(resourceId)))}>
              All
            </button>
            <button type="button" className="link-button small" onClick={() => setPicked(new Set())}>
              None
            </button>
          </div>
          {resources.map((r) => {
            const id = resourceId(r);
            return (
              <label key={id} className="check sync-pick-row">
                <input type="checkbox" checked={picked.has(id)} onChange={() => toggle(id)} />
                <span className="ellipsis">{resourceLabel(r, true)}</span>
                <SyncBadge status={r.status} />
              </label>
            );
          })}
          {pickError && <div className="field-error">{pickError}</div>}
        </div>
      )}
      <p className="confirm-summary" data-testid="sync-summary">
        {dryRun ? 'Dry run: would apply ' : 'Applies '}
        {plural(count, 'resource')} from <code>{revision.trim() || target}</code> to {a.spec ? destinationLabel(a.spec.spec.destination) : 'the destination'}
        {prune ? ', deleting what git no longer has' : ', deleting nothing'}.
      </p>
      {error !== undefined && <ErrorNote error={error} />}
    </FormDialog>
  );
}

function SyncResultView({ r }: { r: SyncResult }) {
  return (
    <div data-testid="sync-result" data-phase={r.phase}>
      <p>
        <PhaseBadge phase={r.phase} /> {r.dryRun && <Badge tone="info">dry run</Badge>} <code>{shortSha(r.revision)}</code> <span className="muted">{r.message}</span>
      </p>
      {r.resources?.length ? (
        <DataTable
          className="table table-compact"
          rows={r.resources}
          rowKey={resourceId}
          columns={[
            { header: 'Resource', cellClassName: 'ellipsis-cell', cell: (x) => resourceLabel(x, true) },
            { header: 'Result', cell: (x) => <Badge tone={resultTone(x.result)}>{x.result}</Badge> },
            { header: 'Wave', cellClassName: 'col-num', cell: (x) => x.wave },
            { header: 'Message', cellClassName: 'muted small', cell: (x) => x.message || '—' },
          ]}
        />
      ) : (
        <p className="muted">No resources.</p>
      )}
      {r.hooks?.length ? (
        <>
          <h3 className="section-title">Hooks</h3>
          <ul className="plain-list">
            {r.hooks.map((h) => (
              <li key={resourceId(h)}>
                {resourceLabel(h)} <span className="muted">{h.type}</span> <PhaseBadge phase={h.phase} title={h.message} />
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}

// ─── Delete ───

function DeleteDialog({ open, a, runtime, onClose }: { open: boolean; a: ProxyApplication; runtime: string; onClose: () => void }) {
  const [cascade, setCascade] = useState(true);
  const [typed, setTyped] = useState('');
  const close = () => {
    setTyped('');
    setCascade(true);
    onClose();
  };
  return (
    <ConfirmDialog
      open={open}
      title="Delete application"
      confirmLabel="Delete application"
      danger
      confirmDisabled={typed !== a.name}
      onClose={close}
      onConfirm={async () => {
        await appProxy.remove(runtime, a.name, cascade);
        navigate(href(APPLICATIONS_PATH, { runtime }));
      }}
    >
      <p>
        Delete <strong>{a.name}</strong> from runtime {runtime}? {a.file ? <><code>{a.file}</code> is removed from the installation repository</> : 'It is removed from the installation repository'} and the engine stops syncing it.
      </p>
      <label className="check">
        <input type="checkbox" name="cascade" checked={cascade} onChange={(e) => setCascade(e.target.checked)} /> Also delete its {plural(a.status.resources?.length ?? 0, 'resource')} from the cluster (cascade)
      </label>
      {!cascade && <p className="muted small">Without cascade the resources stay in the cluster, no longer managed.</p>}
      <Field label={`Type ${a.name} to confirm`}>
        <input type="text" name="confirmName" value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" spellCheck={false} />
      </Field>
    </ConfirmDialog>
  );
}

// ─── Tree ───

type TreeView = 'graph' | 'network' | 'list';
const TREE_VIEWS: { id: TreeView; label: string }[] = [
  { id: 'graph', label: 'Graph' },
  { id: 'network', label: 'Network' },
  { id: 'list', label: 'List' },
];

/** The tree tab's view (?view=graph|network|list; graph when absent). */
function useTreeView(): [TreeView, (v: TreeView) => void] {
  const { search, pathname } = useLocation();
  const v = new URLSearchParams(search).get('view') as TreeView | null;
  const view = v && TREE_VIEWS.some((x) => x.id === v) ? v : 'graph';
  const set = (next: TreeView) => {
    const q = Object.fromEntries(new URLSearchParams(window.location.search));
    navigate(href(pathname, { ...q, view: next === 'graph' ? undefined : next }), { replace: true });
  };
  return [view, set];
}

function TreePanel({ runtime, a, canWrite, onChanged }: { runtime: string; a: ProxyApplication; canWrite: boolean; onChanged: (msg?: string) => void }) {
  const tree = useResource((signal) => appProxy.tree(runtime, a.name, signal), [runtime, a.name, a.status.reconciledAt]);
  useVisiblePoll(tree.reload, TREE_POLL_MS);
  const [view, setView] = useTreeView();
  const [collapsed, setCollapsed] = useState<Set<string>>(() => new Set());
  const [expanded, setExpanded] = useState<Set<string>>(() => new Set());
  const [open, setOpen] = useState<string>();
  const resources = a.status.resources;
  const roots = useMemo(() => mergeTree(tree.data?.items ?? [], resources), [tree.data, resources]);
  const rows = useMemo(() => (view === 'list' ? flattenTree(roots, resources, collapsed) : []), [view, roots, resources, collapsed]);
  const layout = useMemo(
    () => (view === 'list' ? undefined : layoutGraph(view === 'network' ? networkGraph(roots, resources, expanded) : treeGraph(a.name, roots, resources, expanded))),
    [view, roots, resources, expanded, a.name],
  );
  const kinds = useMemo(() => kindCounts(roots), [roots]);
  // The panel's object, found again in each new tree (its health changes as it is polled).
  const openNode = useMemo(() => (open ? layout?.nodes.find((n) => n.id === open)?.node ?? findNode(roots, open) : undefined), [open, layout, roots]);
  if (tree.error !== undefined && !tree.data) return <ErrorState error={tree.error} onRetry={tree.reload} />;
  if (!tree.data) return <LoadingRows rows={4} label="Loading the resource tree" />;
  if (roots.length === 0) return <EmptyState title="No resources">The application renders no resources from git, and nothing in the cluster belongs to it.</EmptyState>;
  const toggle = (id: string) =>
    setCollapsed((c) => {
      const n = new Set(c);
      if (n.has(id)) n.delete(id);
      else n.add(id);
      return n;
    });
  const onOpen = (n: PlacedNode) => setOpen(n.id);
  const onExpand = (key: string) => setExpanded((e) => new Set(e).add(key));
  return (
    <>
      <div className="graph-tools">
        <div className="segmented" role="radiogroup" aria-label="View">
          {TREE_VIEWS.map((v) => (
            <label key={v.id} className={view === v.id ? 'segment segment-active' : 'segment'}>
              <input type="radio" name="tree-view" className="visually-hidden" checked={view === v.id} onChange={() => setView(v.id)} /> {v.label}
            </label>
          ))}
        </div>
        <p className="muted small">
          {kinds.length ? kinds.map(([k, n]) => `${n} ${k}`).join(' · ') + ' live' : 'Nothing live yet: sync to create the resources.'}
          {view === 'network' && ' · Ingress → Service → Pods, by the Ingresses\' backends and the Services\' selectors'}
        </p>
        {expanded.size > 0 && view !== 'list' && (
          <button type="button" className="link-button small" onClick={() => setExpanded(new Set())}>
            Group pods again
          </button>
        )}
      </div>
      {view === 'list' ? (
        <div className="tree" role="tree" aria-label="Resource tree" data-testid="app-tree">
          {rows.map((r) => (
            <TreeItem key={r.id} row={r} namespace={a.spec?.spec.destination.namespace} onToggle={() => toggle(r.id)} />
          ))}
        </div>
      ) : layout && layout.nodes.length === 0 ? (
        <EmptyState title="No network objects">No Ingress or Service of this application routes to its Pods.</EmptyState>
      ) : layout ? (
        <ResourceGraph layout={layout} selected={open} onOpen={onOpen} onExpand={onExpand} label={view === 'network' ? 'Network of the application' : 'Resource graph'} />
      ) : null}
      {openNode && (
        <ResourcePanel
          key={open}
          runtime={runtime}
          app={a.name}
          node={openNode}
          canWrite={canWrite}
          onClose={() => setOpen(undefined)}
          onChanged={(msg) => {
            onChanged(msg);
            tree.reload({ quiet: true });
          }}
        />
      )}
    </>
  );
}

/** The tree node of graph id (an object's UID, or res:GROUP/KIND/NAMESPACE/NAME). */
function findNode(roots: TreeNode[], id: string): TreeNode | undefined {
  for (const n of roots) {
    if ((n.uid || 'res:' + resourceId(n)) === id) return n;
    const c = findNode(n.children ?? [], id);
    if (c) return c;
  }
  return undefined;
}

/** One object of the tree; its namespace is shown when it is not the application's. */
function TreeItem({ row, namespace, onToggle }: { row: TreeRow; namespace?: string; onToggle: () => void }) {
  const n: TreeNode = row.node;
  const h = healthBadge(n.health?.status);
  // Named from its content (a treeitem may be): a label differing from the visible text fails
  // axe-core's label-content-name-mismatch.
  return (
    <div
      className="tree-row"
      role="treeitem"
      aria-level={row.depth + 1}
      aria-expanded={row.childCount ? !row.collapsed : undefined}
      data-testid="tree-node"
      data-kind={n.kind}
      data-depth={row.depth}
      data-health={n.health?.status}
    >
      {row.guides.map((g, i) => (
        <span key={i} className={g ? 'tree-guide tree-guide-line' : 'tree-guide'} aria-hidden="true" />
      ))}
      {row.depth > 0 && <span className={row.last ? 'tree-guide tree-branch tree-branch-last' : 'tree-guide tree-branch'} aria-hidden="true" />}
      <div className={`tree-node tree-node-${h.tone}${row.missing ? ' tree-node-missing' : ''}`}>
        {row.childCount > 0 ? (
          <button type="button" className="tree-toggle" onClick={onToggle} aria-label={`${row.collapsed ? 'Expand' : 'Collapse'} ${n.kind} ${n.name}`}>
            {row.collapsed ? '▸' : '▾'}
          </button>
        ) : (
          <span className="tree-toggle" aria-hidden="true" />
        )}
        <span className="tree-kind">{n.kind}</span>
        <span className="tree-name" title={[n.namespace, n.name].filter(Boolean).join('/')}>
          {n.name}
        </span>
        {n.namespace && n.namespace !== namespace && <span className="muted small">in {n.namespace}</span>}
        <HealthBadge status={n.health?.status} message={n.health?.message} />
        {row.managed && n.sync && <SyncBadge status={n.sync} />}
        {row.requiresPruning && <Badge tone="danger">requires pruning</Badge>}
        {row.collapsed && <span className="muted small">{plural(row.childCount, 'child', 'children')} hidden</span>}
        {n.images?.length ? (
          <span className="chips tree-images">
            {n.images.map((img) => (
              <code key={img} className="chip" title="Image">
                {img}
              </code>
            ))}
          </span>
        ) : null}
        {n.health?.message && n.health.status !== 'Healthy' && <span className="tree-msg muted small">{n.health.message}</span>}
        {n.createdAt && (
          <span className="tree-age muted small" title={formatTime(n.createdAt)}>
            {relativeTime(n.createdAt)}
          </span>
        )}
      </div>
    </div>
  );
}

// ─── Diff ───

const DIFF_MODE_LABELS: Record<DiffMode, string> = { unified: 'Unified', split: 'Split', compact: 'Compact' };

/** The diff tab's view (?diff=unified|split|compact; unified when absent). */
function useDiffMode(): [DiffMode, (m: DiffMode) => void] {
  const { search, pathname } = useLocation();
  const mode = diffModeFrom(new URLSearchParams(search).get('diff'));
  const set = (next: DiffMode) => {
    const q = Object.fromEntries(new URLSearchParams(window.location.search));
    navigate(href(pathname, { ...q, diff: next === 'unified' ? undefined : next }), { replace: true });
  };
  return [mode, set];
}

function DiffPanel({ runtime, a }: { runtime: string; a: ProxyApplication }) {
  const diff = useResource((signal) => appProxy.diff(runtime, a.name, signal), [runtime, a.name, a.status.reconciledAt, a.status.revision]);
  const [mode, setMode] = useDiffMode();
  if (diff.error !== undefined && !diff.data) return <ErrorState error={diff.error} onRetry={diff.reload} />;
  if (!diff.data) return <LoadingRows rows={4} label="Comparing with the cluster" />;
  const items = differing(diff.data.items);
  if (items.length === 0) {
    return (
      <EmptyState title="No differences">
        The cluster matches git{a.status.revision ? <> at <code>{shortSha(a.status.revision)}</code></> : ''}: every one of the {plural(diff.data.items.length, 'resource')} is in sync.
      </EmptyState>
    );
  }
  return (
    <div className="diffs" aria-busy={diff.loading} data-diff-mode={mode}>
      <div className="diff-tools">
        <div className="segmented" role="radiogroup" aria-label="Diff view">
          {DIFF_MODES.map((m) => (
            <label key={m} className={mode === m ? 'segment segment-active' : 'segment'}>
              <input type="radio" name="diff-mode" className="visually-hidden" checked={mode === m} onChange={() => setMode(m)} /> {DIFF_MODE_LABELS[m]}
            </label>
          ))}
        </div>
        <p className="muted small">
          {plural(items.length, 'resource')} of {diff.data.items.length} differ{items.length === 1 ? 's' : ''}: live (−{mode === 'split' ? ', left' : ''}) against what git renders (+
          {mode === 'split' ? ', right' : ''}).{mode === 'compact' && ' Only the changes with three lines around them; ⋯ opens the lines between.'}
        </p>
      </div>
      {items.map((d) => (
        <ResourceDiffView key={resourceId(d)} d={d} mode={mode} />
      ))}
    </div>
  );
}

function ResourceDiffView({ d, mode }: { d: ResourceDiff; mode: DiffMode }) {
  const lines = useMemo(() => parseUnifiedDiff(d.diff ?? ''), [d.diff]);
  const stats = diffStats(lines);
  const loc = locationLabel(d.source);
  return (
    <details className="diff-card" open data-testid="resource-diff" data-resource={resourceLabel(d)}>
      <summary className="diff-head">
        <span className="strong">{resourceLabel(d, true)}</span>
        <SyncBadge status={d.status} />
        {loc && <code className="small muted">{loc}</code>}
        <span className="diff-stats small">
          <span className="text-success">+{stats.added}</span> <span className="text-danger">−{stats.removed}</span>
        </span>
      </summary>
      {d.message && <p className="diff-msg small">{d.message}</p>}
      {lines.length > 0 ? (
        <DiffLines key={mode} lines={lines} label={`Diff of ${resourceLabel(d)}`} mode={mode} />
      ) : (
        <p className="muted small diff-msg">No line diff for this resource.</p>
      )}
    </details>
  );
}

// ─── History and rollback ───

function HistoryPanel({ runtime, a, canWrite, onChanged }: { runtime: string; a: ProxyApplication; canWrite: boolean; onChanged: (msg?: string) => void }) {
  const op = a.status.operation;
  const hist = useResource((signal) => appProxy.history(runtime, a.name, signal), [runtime, a.name, op?.startedAt, op?.finishedAt]);
  const [target, setTarget] = useState<HistoryEntry>();
  const [prune, setPrune] = useState(false);
  const auto = a.spec?.spec.syncPolicy?.automated;
  const automated = !!auto && auto.enabled !== false;
  if (hist.error !== undefined && !hist.data) return <ErrorState error={hist.error} onRetry={hist.reload} />;
  if (!hist.data) return <LoadingRows rows={3} label="Loading history" />;
  const items = hist.data.items.slice().reverse();
  if (items.length === 0) return <EmptyState title="No syncs yet">Each sync (not dry runs) is recorded here with its revision, what it changed and how long it took.</EmptyState>;
  const newest = items[0].id;
  return (
    <>
      <ol className="timeline" data-testid="app-history">
        {items.map((h) => (
          <li key={h.id} className={`timeline-item timeline-${phaseTone(h.phase)}`} data-testid="history-entry" data-id={h.id}>
            <div className="timeline-head">
              <span className="strong">#{h.id}</span>
              <PhaseBadge phase={h.phase} title={h.message} />
              <code title={h.revision}>{shortSha(h.revision)}</code>
              <span className="ellipsis">{subject(h.commit?.message) || <span className="muted">no commit message</span>}</span>
              {h.commit?.author && <span className="muted nowrap">by {h.commit.author}</span>}
              <span className="timeline-actions">
                {h.id !== newest && (
                  <button type="button" className="button button-small" onClick={() => setTarget(h)} disabled={!canWrite} aria-label={`Roll back to #${h.id}`}>
                    Roll back
                  </button>
                )}
              </span>
            </div>
            <div className="timeline-meta muted small">
              <span>{initiatorLabel(h.initiatedBy)}</span>
              <span title={formatTime(h.startedAt)}>{relativeTime(h.startedAt)}</span>
              <span>took {formatDuration(h.duration / 1e6)}</span>
              {h.message && <span className="ellipsis">{h.message}</span>}
            </div>
            {h.changed?.length ? (
              <ul className="chips timeline-changed" aria-label="Changed resources">
                {h.changed.map((c) => (
                  <li key={resourceId(c)} className="chip" title={c.message}>
                    <span className={`text-${resultTone(c.result)}`}>{c.result}</span> {resourceLabel(c)}
                  </li>
                ))}
              </ul>
            ) : (
              <p className="muted small timeline-changed">Changed nothing.</p>
            )}
          </li>
        ))}
      </ol>
      <ConfirmDialog
        open={!!target}
        title="Roll back"
        confirmLabel={target ? `Roll back to #${target.id}` : 'Roll back'}
        onClose={() => {
          setTarget(undefined);
          setPrune(false);
        }}
        onConfirm={async () => {
          if (!target) return;
          const r = await appProxy.rollback(runtime, a.name, target.id, prune);
          onChanged(
            `Rolled back to #${target.id} (${shortSha(target.revision)}): ${r.result?.phase ?? 'started'}.` + (r.autoSyncDisabled ? ' Auto-sync is now off.' : ''),
          );
          hist.reload({ quiet: true });
        }}
      >
        {target && (
          <>
            <p>
              Sync <strong>{a.name}</strong> to revision <code>{shortSha(target.revision)}</code>
              {target.commit ? <> ({subject(target.commit.message)})</> : null} from sync #{target.id}?
            </p>
            <p data-testid="rollback-autosync">
              {automated && !a.status.autoSyncDisabled ? (
                <>
                  <strong>Auto-sync will be switched off</strong> for this application, so that the next poll does not sync it straight back to git. It stays off until turned on again.
                </>
              ) : automated ? (
                <>Auto-sync is already switched off by an earlier rollback; it stays off.</>
              ) : (
                <>Auto-sync is not on for this application, so it stays at this revision until the next sync.</>
              )}
            </p>
            <label className="check">
              <input type="checkbox" checked={prune} onChange={(e) => setPrune(e.target.checked)} /> Prune: delete live resources that revision does not have
            </label>
          </>
        )}
      </ConfirmDialog>
    </>
  );
}

function initiatorLabel(i: string): string {
  switch (i) {
    case 'user':
      return 'by a user';
    case 'automated':
      return 'automated';
    case 'selfHeal':
      return 'self-heal';
    case 'rollback':
      return 'rollback';
    default:
      return i || '—';
  }
}

// ─── Conditions and resources ───

function conditionTone(type: string): 'danger' | 'warning' {
  return /Error$/.test(type) || type === 'NoClusterConfigured' ? 'danger' : 'warning';
}

function ConditionsPanel({ a }: { a: ProxyApplication }) {
  const items = a.status.conditions ?? [];
  if (items.length === 0) return <EmptyState title="No conditions">Nothing is wrong with the spec, the source or the last sync.</EmptyState>;
  return (
    <DataTable
      testId="app-conditions"
      rows={items}
      rowKey={(c, i) => `${c.type}-${i}`}
      columns={[
        { header: 'Type', cellClassName: 'nowrap', cell: (c) => <Badge tone={conditionTone(c.type)}>{c.type}</Badge> },
        { header: 'Message', cellClassName: 'pre-wrap', cell: (c) => c.message },
        { header: 'Where', cell: (c) => sourceCell(c.source) },
        { header: 'Since', cellClassName: 'nowrap', cellProps: (c) => ({ title: formatTime(c.since) }), cell: (c) => (isZeroTime(c.since) ? '—' : relativeTime(c.since)) },
      ]}
    />
  );
}

/** Where in git an object comes from, or a dash. */
function sourceCell(source: SourceLocation | undefined, className?: string) {
  const loc = locationLabel(source);
  return loc ? <code className={className}>{loc}</code> : <span className="muted">—</span>;
}

function ResourcesPanel({ resources }: { resources: ResourceStatus[] }) {
  if (resources.length === 0) return <EmptyState title="No managed resources">The application renders nothing from git yet.</EmptyState>;
  const sorted = resources.slice().sort((x, y) => (x.syncWave ?? 0) - (y.syncWave ?? 0) || x.kind.localeCompare(y.kind) || x.name.localeCompare(y.name));
  return (
    <DataTable
      className="table table-compact"
      testId="app-resources"
      rows={sorted}
      rowKey={resourceId}
      rowProps={(r) => ({ 'data-testid': `resource-${r.kind}-${r.name}` })}
      columns={[
        {
          header: 'Kind',
          cellProps: (r) => ({ title: [r.group, r.version].filter(Boolean).join('/') }),
          cell: (r) => (
            <>
              {r.kind}
              {r.hook && (
                <>
                  {' '}
                  <Badge tone="info">hook</Badge>
                </>
              )}
            </>
          ),
        },
        { header: 'Name', cellClassName: 'strong ellipsis-cell', cell: (r) => r.name },
        { header: 'Namespace', cellClassName: 'muted', cell: (r) => r.namespace || '—' },
        {
          header: 'Sync',
          cellClassName: 'nowrap',
          cell: (r) => (
            <>
              <SyncBadge status={r.status} />
              {r.requiresPruning && (
                <>
                  {' '}
                  <Badge tone="danger">requires pruning</Badge>
                </>
              )}
            </>
          ),
        },
        {
          header: 'Health',
          cellClassName: 'nowrap',
          cell: (r) => (
            <>
              {r.health ? <HealthBadge status={r.health.status} message={r.health.message} /> : <span className="muted">—</span>}
              {r.health?.message && r.health.status !== 'Healthy' && <div className="muted small">{r.health.message}</div>}
              {r.message && <div className="muted small">{r.message}</div>}
            </>
          ),
        },
        { header: 'Wave', cellClassName: 'col-num', cell: (r) => r.syncWave ?? 0 },
        { header: 'Source', cell: (r) => sourceCell(r.source, 'small') },
      ]}
    />
  );
}
