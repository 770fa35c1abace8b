// One application as a tile of the Applications list (?view=tiles), and what its row in the
// table shares with it: the problem badge and the Sync and Refresh buttons.
import type { AppSummary } from '../api/apps';
import { Link } from '../app/router';
import { appPath, clusterName, problemLabel } from '../lib/apps';
import { shortSha } from '../lib/builds';
import { formatTime, relativeTime } from '../lib/format';
import { HealthBadge, SyncBadge } from './AppStatus';

export type AppAction = 'sync' | 'refresh';

export interface AppRowProps {
  a: AppSummary;
  clusters?: { name: string; server: string }[];
  canWrite: boolean;
  busy?: AppAction;
  onAction: (kind: AppAction, a: AppSummary) => void;
}

/** "Type: message": the type on the badge, the whole as its tooltip and for screen readers. */
export function ProblemBadge({ problem: text }: { problem?: string | null }) {
  if (!text) return null;
  const type = text.split(':')[0];
  const message = text.slice(text.indexOf(':') + 1).trim();
  return (
    // A permanent condition is a problem with its reason, not a state to wait out.
    <span className="badge badge-danger app-problem" title={text} data-testid="app-problem">
      <span aria-hidden="true">⚠ </span>
      {problemLabel(type)}
      <span className="visually-hidden">
        {' '}
        ({type}: {message})
      </span>
    </span>
  );
}

/** Sync and Refresh, named with the application ("Sync web") from their text, not aria-label. */
export function AppActions({ a, canWrite, busy, onAction }: AppRowProps) {
  const why = canWrite ? undefined : 'Your role (viewer) can look but not sync or refresh';
  return (
    <span className="app-actions">
      <button type="button" className="button button-small" disabled={!canWrite || !!busy} aria-busy={busy === 'sync' || undefined} title={why} onClick={() => onAction('sync', a)} data-action="sync">
        {busy === 'sync' && <span className="spinner" aria-hidden="true" />}
        Sync<span className="visually-hidden"> {a.name}</span>
      </button>
      <button type="button" className="button button-small" disabled={!canWrite || !!busy} aria-busy={busy === 'refresh' || undefined} title={why} onClick={() => onAction('refresh', a)} data-action="refresh">
        {busy === 'refresh' && <span className="spinner" aria-hidden="true" />}
        Refresh<span className="visually-hidden"> {a.name}</span>
      </button>
    </span>
  );
}

export function AppTile(p: AppRowProps) {
  const { a, clusters } = p;
  const titleId = `app-tile-${a.id}`;
  const dest = [clusterName(a.destination, clusters) || '—', a.destination.namespace].filter(Boolean).join(' / ');
  return (
    <article className={`app-tile app-tile-${a.healthStatus}`} data-testid={`app-tile-${a.runtime}-${a.name}`} data-sync={a.syncStatus} data-health={a.healthStatus} aria-labelledby={titleId}>
      <header className="app-tile-head">
        <Link to={appPath(a.runtime, a.name)} className="strong ellipsis" id={titleId}>
          {a.name}
        </Link>
        <span className="muted small ellipsis">
          {a.project} · {a.runtime}
        </span>
      </header>
      <div className="app-tile-badges">
        <HealthBadge status={a.healthStatus} message={a.healthMessage} />
        <SyncBadge status={a.syncStatus} />
        <ProblemBadge problem={a.problem} />
      </div>
      <dl className="app-tile-facts small">
        <div>
          <dt>Repository</dt>
          <dd className="ellipsis" title={a.repoUrl}>
            {a.repoUrl ? <code>{a.repoUrl}</code> : <span className="muted">—</span>}
          </dd>
        </div>
        <div>
          <dt>Path</dt>
          <dd className="ellipsis" title={a.path}>
            {a.path || <span className="muted">—</span>}
          </dd>
        </div>
        <div>
          <dt>Target</dt>
          <dd className="ellipsis" title={[a.targetRevision, a.revision].filter(Boolean).join(' → ')}>
            {a.targetRevision || 'HEAD'}
            {a.revision && (
              <>
                {' '}
                <code className="muted">{shortSha(a.revision)}</code>
              </>
            )}
          </dd>
        </div>
        <div>
          <dt>Destination</dt>
          <dd className="ellipsis" title={[a.destination.server ?? a.destination.name, a.destination.namespace].filter(Boolean).join(' ')}>
            {dest}
          </dd>
        </div>
        <div>
          <dt>Reconciled</dt>
          <dd title={formatTime(a.reconciledAt)}>{a.reconciledAt ? relativeTime(a.reconciledAt) : 'not yet'}</dd>
        </div>
      </dl>
      <footer className="app-tile-actions">
        <AppActions {...p} />
      </footer>
    </article>
  );
}

