// The node panel of the resource graph: one object of an application's tree in a drawer, from
// the runtime's app-proxy (docs/appproxy.md, "One resource"): its live and desired manifests,
// their diff, its events, a Pod's log (followed live), and the actions members may take on it
// (sync this resource, restart a workload, delete with a propagation policy).
import { useEffect, useMemo, useRef, useState } from 'react';
import { appProxy, streamPodLog, type DeletePropagation, type ResourceKey } from '../api/apps';
import { HealthBadge, SyncBadge } from './AppStatus';
import { ConfirmDialog } from './ConfirmDialog';
import { Dialog } from './Dialog';
import { DiffLines } from './DiffLines';
import { EmptyState, ErrorNote, ErrorState, LoadingRows } from './States';
import { Tabs } from './Tabs';
import { parseUnifiedDiff } from '../lib/diff';
import { formatTime, relativeTime } from '../lib/format';
import { toYaml } from '../lib/yaml';
import { resourceId } from '../lib/apps';
import { useResource } from '../lib/useResource';
import type { TreeNode } from '../api/apps';

type PanelTab = 'node-live' | 'node-desired' | 'node-diff' | 'node-events' | 'node-logs';

const RESTARTABLE = new Set(['Deployment', 'StatefulSet', 'DaemonSet']);

/** The key of a tree node as the app-proxy takes it. */
function keyOf(n: TreeNode): ResourceKey {
  return { group: n.group, kind: n.kind, namespace: n.namespace, name: n.name };
}

export function ResourcePanel({ runtime, app, node, canWrite, onClose, onChanged }: { runtime: string; app: string; node: TreeNode; canWrite: boolean; onClose: () => void; onChanged: (msg: string) => void }) {
  // The same key while the tree is polled (a new node object each time): the log stream and the
  // events must not restart with every poll.
  const k = useMemo(() => keyOf(node), [node.group, node.kind, node.namespace, node.name]);
  const isPod = node.kind === 'Pod' && !node.group;
  const [tab, setTab] = useState<PanelTab>('node-live');
  const detail = useResource((signal) => appProxy.resource(runtime, app, k, signal), [runtime, app, k.group, k.kind, k.namespace, k.name]);
  const [confirm, setConfirm] = useState<'delete' | 'restart' | 'sync'>();
  const [propagation, setPropagation] = useState<DeletePropagation>('foreground');
  const d = detail.data;
  const tabs: { id: PanelTab; label: string }[] = [
    { id: 'node-live', label: 'Live' },
    { id: 'node-desired', label: 'Desired' },
    { id: 'node-diff', label: 'Diff' },
    { id: 'node-events', label: 'Events' },
    ...(isPod ? [{ id: 'node-logs' as const, label: 'Logs' }] : []),
  ];
  const id = resourceId(k);
  const restartable = k.group === 'apps' && RESTARTABLE.has(k.kind);
  return (
    <Dialog open drawer wide title={`${node.kind} ${node.name}`} onClose={onClose}>
      <div data-testid="node-panel" data-kind={node.kind} data-name={node.name}>
        <p className="small">
          <HealthBadge status={node.health?.status} message={node.health?.message} /> {d?.managed && d.status && <SyncBadge status={d.status} />}{' '}
          <span className="muted">
            {node.namespace ? `in ${node.namespace} · ` : ''}
            {[node.group, node.version].filter(Boolean).join('/')}
            {d && !d.managed && ' · owned by a managed resource (no desired state)'}
          </span>
        </p>
        {node.health?.message && node.health.status !== 'Healthy' && <p className="muted small">{node.health.message}</p>}
        <div className="node-panel-actions">
          {d?.managed && (
            <button type="button" className="button button-small" disabled={!canWrite} onClick={() => setConfirm('sync')}>
              Sync this resource
            </button>
          )}
          {restartable && (
            <button type="button" className="button button-small" disabled={!canWrite || !node.uid} onClick={() => setConfirm('restart')}>
              Restart
            </button>
          )}
          <button type="button" className="button button-small button-danger-quiet" disabled={!canWrite || !node.uid} onClick={() => setConfirm('delete')}>
            Delete
          </button>
        </div>
        <Tabs label="Resource details" tab={tab} onChange={setTab} tabs={tabs} />
        <div role="tabpanel" id={`panel-${tab}`} aria-labelledby={`tab-${tab}`} className="tab-panel" data-testid={`panel-${tab}`}>
          {tab === 'node-events' ? (
            <EventsTab runtime={runtime} app={app} k={k} />
          ) : tab === 'node-logs' ? (
            <LogsTab runtime={runtime} app={app} k={k} node={node} />
          ) : detail.error !== undefined && !d ? (
            <ErrorState error={detail.error} onRetry={detail.reload} />
          ) : !d ? (
            <LoadingRows rows={4} label="Loading the manifests" />
          ) : tab === 'node-live' ? (
            d.live ? <pre className="manifest" tabIndex={0} data-testid="live-manifest" aria-label="Live manifest">{toYaml(d.live)}</pre> : <EmptyState title="Not in the cluster">Sync to create it.</EmptyState>
          ) : tab === 'node-desired' ? (
            d.desired ? (
              <pre className="manifest" tabIndex={0} data-testid="desired-manifest" aria-label="Desired manifest">{toYaml(d.desired)}</pre>
            ) : (
              <EmptyState title="No desired state">{d.managed ? 'git no longer has it: a sync with prune deletes it.' : 'The application does not render this object: a managed resource owns it.'}</EmptyState>
            )
          ) : d.diff ? (
            <DiffLines lines={parseUnifiedDiff(d.diff)} label={`Diff of ${node.kind} ${node.name}`} />
          ) : (
            <EmptyState title="No differences">{d.managed ? 'The live object matches what git renders.' : 'Only managed resources are compared with git.'}</EmptyState>
          )}
          {d?.message && <p className="muted small">{d.message}</p>}
        </div>
      </div>
      <ConfirmDialog
        open={confirm === 'sync'}
        title="Sync this resource"
        confirmLabel="Sync"
        onClose={() => setConfirm(undefined)}
        onConfirm={async () => {
          const r = await appProxy.sync(runtime, app, { resources: [id] });
          onChanged(`Synced ${node.kind} ${node.name}: ${r.phase}.`);
          detail.reload({ quiet: true });
        }}
      >
        <p>
          Apply <strong>{node.kind} {node.name}</strong> from git, and nothing else of {app}?
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        open={confirm === 'restart'}
        title="Restart"
        confirmLabel="Restart"
        onClose={() => setConfirm(undefined)}
        onConfirm={async () => {
          const r = await appProxy.restartResource(runtime, app, k);
          onChanged(`Restarting ${node.kind} ${node.name}: its Pods are replaced (restartedAt ${formatTime(r.restartedAt)}).`);
          detail.reload({ quiet: true });
        }}
      >
        <p>
          Replace the Pods of <strong>{node.kind} {node.name}</strong>, one by one as its update strategy says? This sets <code>kubectl.kubernetes.io/restartedAt</code> on its pod template, as{' '}
          <code>kubectl rollout restart</code> does; git is not changed and the application stays in sync.
        </p>
      </ConfirmDialog>
      <ConfirmDialog
        open={confirm === 'delete'}
        title="Delete resource"
        confirmLabel={`Delete ${node.kind}`}
        danger
        onClose={() => {
          setConfirm(undefined);
          setPropagation('foreground');
        }}
        onConfirm={async () => {
          await appProxy.deleteResource(runtime, app, k, propagation);
          onChanged(`Deleted ${node.kind} ${node.name} (${propagation}).`);
          onClose();
        }}
      >
        <p>
          Delete <strong>{node.kind} {node.name}</strong> from the cluster?{' '}
          {d?.managed ? 'git still has it: the next sync (at once with auto-sync) creates it again.' : 'Its owner usually creates it again (a ReplicaSet its Pods).'}
        </p>
        <fieldset className="radio-row radio-field">
          <legend>What happens to the objects it owns</legend>
          {(['foreground', 'background', 'orphan'] as const).map((p) => (
            <label key={p} className="radio">
              <input type="radio" name="propagation" checked={propagation === p} onChange={() => setPropagation(p)} />{' '}
              {p === 'foreground' ? 'Foreground: deleted first, then this' : p === 'background' ? 'Background: deleted after this' : 'Orphan: they stay'}
            </label>
          ))}
        </fieldset>
      </ConfirmDialog>
    </Dialog>
  );
}

function EventsTab({ runtime, app, k }: { runtime: string; app: string; k: ResourceKey }) {
  const evs = useResource((signal) => appProxy.resourceEvents(runtime, app, k, signal), [runtime, app, k]);
  if (evs.error !== undefined && !evs.data) return <ErrorState error={evs.error} onRetry={evs.reload} />;
  if (!evs.data) return <LoadingRows rows={3} label="Loading events" />;
  if (evs.data.items.length === 0) return <EmptyState title="No events">Kubernetes keeps events for an hour.</EmptyState>;
  return (
    <ul className="plain-list" data-testid="node-events">
      {evs.data.items.map((e, i) => (
        <li key={i} className="small">
          <span className={e.type === 'Warning' ? 'text-danger strong' : 'strong'}>{e.reason}</span> {e.message}{' '}
          <span className="muted" title={formatTime(e.lastSeen)}>
            {e.count > 1 ? `×${e.count} · ` : ''}
            {relativeTime(e.lastSeen)}
            {e.source ? ` · ${e.source}` : ''}
          </span>
        </li>
      ))}
    </ul>
  );
}

/** The most a followed log keeps in the panel (older text is dropped from the top). */
const LOG_KEEP = 512 * 1024;

function LogsTab({ runtime, app, k, node }: { runtime: string; app: string; k: ResourceKey; node: TreeNode }) {
  const [follow, setFollow] = useState(true);
  const [text, setText] = useState('');
  const [error, setError] = useState<unknown>();
  const [state, setState] = useState<'loading' | 'streaming' | 'ended'>('loading');
  const pre = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const ctl = new AbortController();
    setText('');
    setError(undefined);
    setState('loading');
    streamPodLog(runtime, app, k, { follow, tailLines: 1000 }, (t) => {
      setState('streaming');
      setText((old) => {
        const s = old + t;
        return s.length > LOG_KEEP ? s.slice(s.length - LOG_KEEP) : s;
      });
    }, ctl.signal)
      .then(() => setState('ended'))
      .catch((e) => {
        if ((e as { name?: string })?.name !== 'AbortError') setError(e);
      });
    return () => ctl.abort();
  }, [runtime, app, k, follow]);
  useEffect(() => {
    const el = pre.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [text, follow]);
  return (
    <div data-testid="node-logs" data-state={state}>
      <label className="check small">
        <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} /> Follow: show new lines as the container writes them
      </label>
      {node.images?.length ? <p className="muted small">{node.images.join(', ')}</p> : null}
      {error !== undefined ? (
        <ErrorNote error={error} />
      ) : (
        <pre ref={pre} className="manifest pod-log" tabIndex={0} aria-label={`Log of ${k.name}`} aria-live="off">
          {text || (state === 'loading' ? 'Opening the log…' : state === 'ended' ? 'The log is empty.' : '')}
        </pre>
      )}
    </div>
  );
}
