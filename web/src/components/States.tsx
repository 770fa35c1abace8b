// Loading, empty and error states, the same on every page.
import { useEffect, useRef, type ReactNode } from 'react';
import { ApiError, errorMessage } from '../api/client';
import { Link } from '../app/router';

export function Spinner({ label = 'Loading' }: { label?: string }) {
  return <span className="spinner" role="status" aria-label={label} />;
}

/** Placeholder rows of the size the data will take, so nothing jumps when it arrives. */
export function LoadingRows({ rows = 5, label = 'Loading' }: { rows?: number; label?: string }) {
  return (
    <div className="loading-rows" role="status" aria-label={label} aria-busy="true">
      {Array.from({ length: rows }, (_, i) => (
        <div key={i} className="skeleton-row" />
      ))}
    </div>
  );
}

export function EmptyState({ title, children, action }: { title: string; children?: ReactNode; action?: ReactNode }) {
  return (
    <div className="empty-state">
      <h3>{title}</h3>
      {children && <div className="muted">{children}</div>}
      {action && <div className="empty-action">{action}</div>}
    </div>
  );
}

function describe(err: unknown): { title: string; hint?: string } {
  if (!(err instanceof ApiError)) return { title: 'Something went wrong' };
  switch (err.code) {
    case 'permission_denied':
      return { title: 'Not allowed', hint: 'Your role in this account does not allow this. An admin can change your role.' };
    case 'not_found':
      return { title: 'Not found' };
    case 'network':
      return { title: 'Cannot reach the server' };
    case 'rate_limited':
      return { title: 'Too many attempts' };
    case 'unavailable':
      // Not "try again later": the reason (a cluster that is not configured, a repository that
      // cannot be reached) is the message below, and it may well be permanent.
      return { title: 'Not available' };
    case 'invalid_argument':
      return { title: 'The request was refused' };
    default:
      return { title: 'The server could not do this' };
  }
}

/** The list a detail page belongs to, by the first segment of its path: the way back from a 404. */
const LISTS: Record<string, string> = {
  runtimes: 'Runtimes',
  applications: 'Applications',
  pipelines: 'Pipelines',
  builds: 'Builds',
  users: 'Users',
  'api-keys': 'API keys',
  audit: 'Audit log',
  settings: 'Settings',
  hub: 'Hub',
  helm: 'Helm releases',
};

/** `/pipelines/web/ci` → the Pipelines list; undefined for a path that is itself a list or unknown. */
export function listOf(pathname: string): { to: string; label: string } | undefined {
  const segs = pathname.split('/').filter(Boolean);
  if (segs.length < 2) return undefined;
  // /settings/contexts?context=x → Contexts and secrets is the list; its page reads the query.
  const label = LISTS[segs[0]];
  return label ? { to: '/' + segs[0], label } : undefined;
}

/** A full error state for a page or a panel that failed to load. A not-found one offers the way back to its list. */
export function ErrorState({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  const { title, hint } = describe(error);
  const back = error instanceof ApiError && error.code === 'not_found' && typeof location !== 'undefined' ? listOf(location.pathname) : undefined;
  return (
    <div className="error-state" role="alert">
      <h3>{title}</h3>
      <p>{errorMessage(error)}</p>
      {hint && <p className="muted">{hint}</p>}
      {error instanceof ApiError && error.requestId && <p className="muted small">Request id: <code>{error.requestId}</code></p>}
      {back ? (
        <Link to={back.to} className="button" data-testid="back-to-list">
          Back to {back.label}
        </Link>
      ) : (
        onRetry && (
          <button type="button" className="button" onClick={onRetry}>
            Try again
          </button>
        )
      )}
    </div>
  );
}

/** An inline error under a form or in a dialog: the message and the field it is about. */
export function ErrorNote({ error }: { error: unknown }) {
  const field = error instanceof ApiError ? error.field : undefined;
  return (
    <div className="error-note" role="alert">
      {field && <strong className="error-field">{field}: </strong>}
      {errorMessage(error)}
      {error instanceof ApiError && error.requestId && <span className="muted small"> (request {error.requestId})</span>}
    </div>
  );
}

/** A short confirmation of what just happened; goes away by itself after a few seconds. */
export function Flash({ text, onDone, ms = 6000 }: { text?: string; onDone: () => void; ms?: number }) {
  const done = useRef(onDone);
  done.current = onDone;
  useEffect(() => {
    if (!text) return;
    const t = setTimeout(() => done.current(), ms);
    return () => clearTimeout(t);
  }, [text, ms]);
  if (!text) return null;
  return (
    <div className="notice" role="status">
      <span>{text}</span>
      <button type="button" className="icon-button" aria-label="Dismiss" onClick={() => done.current()}>
        ×
      </button>
    </div>
  );
}
