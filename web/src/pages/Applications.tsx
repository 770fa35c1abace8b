// GitOps applications of every runtime of the account: filters in the URL, pages loaded from
// the server as the virtualised list scrolls, refreshed quietly while only the first page is
// loaded. The list comes from GraphQL, or from each runtime's app-proxy on a server whose
// GraphQL has no applications yet (see lib/appList.ts).
import { Suspense, lazy, useCallback, useEffect, useRef, useState, type FormEvent } from 'react';
import { ApiError } from '../api/client';
import { healthStatuses, listRuntimeRefs, syncCodes, type AppSummary } from '../api/apps';
import { Link, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { HealthBadge, SyncBadge } from '../components/AppStatus';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorNote, ErrorState, LoadingRows, Spinner } from '../components/States';
import { VirtualList } from '../components/VirtualList';
import { appFilterFromParams, appFilterQuery, isAppFiltered, labelError, splitLabels, type AppFilter } from '../lib/appFilters';
import { loadAppPage, type AppSource, type Unreachable } from '../lib/appList';
import { APPLICATIONS_PATH, appPath, clusterName, problemLabel, subject } from '../lib/apps';
import { shortSha } from '../lib/builds';
import { formatTime, relativeTime } from '../lib/format';
import { appendUnique } from '../lib/pagination';
import { runtimePath } from '../lib/runtimes';
import { useResource } from '../lib/useResource';

/** The editor and its template load when the dialog is first opened. */
const NewApplicationDialog = lazy(() => import('./NewApplication'));

/** Rows asked for per request as the list scrolls. */
const PAGE = 500;
const ROW_HEIGHT = 52;
/** While only the first page is loaded, it is asked for again this often. */
const POLL_MS = 10_000;

interface ListState {
  rows: AppSummary[];
  next?: string;
  loading: boolean;
  error?: unknown;
  done: boolean;
  source?: AppSource;
  unreachable: Unreachable[];
  pages: number;
}

const initial: ListState = { rows: [], loading: true, done: false, unreachable: [], pages: 0 };

export default function Applications() {
  const me = useMe();
  const canWrite = me.role !== 'viewer';
  const [creating, setCreating] = useState(false);
  const { search } = useLocation();
  const filter = appFilterFromParams(new URLSearchParams(search));
  const key = JSON.stringify(filter);
  const runtimes = useResource((signal) => listRuntimeRefs(signal), []);
  const [state, setState] = useState<ListState>(initial);
  const [nonce, setNonce] = useState(0);
  // What is being fetched now: a reset or the next page wins over a quiet refresh in flight.
  const busy = useRef<'reset' | 'more' | 'quiet' | undefined>(undefined);
  const ctl = useRef<AbortController | null>(null);

  const fetchPage = useCallback(
    async (after: string | undefined, mode: 'reset' | 'more' | 'quiet') => {
      if (busy.current && mode !== 'reset' && !(mode === 'more' && busy.current === 'quiet')) return;
      ctl.current?.abort();
      const c = new AbortController();
      ctl.current = c;
      busy.current = mode;
      if (mode === 'reset') setState(initial);
      else if (mode === 'more') setState((s) => ({ ...s, loading: true, error: undefined }));
      try {
        const page = await loadAppPage(JSON.parse(key) as AppFilter, PAGE, after, c.signal);
        if (c.signal.aborted) return;
        setState((s) => ({
          rows: mode === 'more' ? appendUnique(s.rows, page.items) : page.items,
          next: page.nextCursor,
          loading: false,
          done: !page.nextCursor,
          source: page.source,
          unreachable: page.unreachable,
          pages: mode === 'more' ? s.pages + 1 : 1,
        }));
      } catch (error) {
        if (c.signal.aborted) return;
        // A failed quiet refresh keeps what is on screen.
        setState((s) => (mode === 'quiet' && s.pages > 0 ? { ...s, loading: false } : { ...s, loading: false, error }));
      } finally {
        if (ctl.current === c) busy.current = undefined;
      }
    },
    [key],
  );

  useEffect(() => {
    fetchPage(undefined, 'reset');
    return () => ctl.current?.abort();
  }, [fetchPage, nonce]);

  // Sync and health change by themselves: look again while the list is one page (a longer one
  // would lose the reader's place).
  useEffect(() => {
    if (state.pages !== 1 || state.error !== undefined) return;
    const t = setInterval(() => {
      if (!document.hidden) fetchPage(undefined, 'quiet');
    }, POLL_MS);
    return () => clearInterval(t);
  }, [state.pages, state.error, fetchPage]);

  const loadMore = useCallback(() => {
    if (busy.current !== 'more' && state.next && state.error === undefined) fetchPage(state.next, 'more');
  }, [fetchPage, state.next, state.error]);

  const filtered = isAppFiltered(filter);
  const first = state.rows.length === 0;
  const filterError = state.error instanceof ApiError && state.error.code === 'invalid_argument' ? state.error : undefined;
  const clustersOf = new Map((runtimes.data ?? []).map((r) => [r.name, r.clusters]));
  const noRuntimes = runtimes.data?.length === 0;

  return (
    <div data-page="applications" data-source={state.source}>
      <PageHeader
        title="Applications"
        actions={
          canWrite && (
            <button type="button" className="button button-primary" onClick={() => setCreating(true)} disabled={noRuntimes}>
              New application
            </button>
          )
        }
      >
        Argo CD Applications that the account's runtimes sync from git to their clusters.
      </PageHeader>
      <Filters key={key} initial={filter} runtimes={runtimes.data?.map((r) => r.name) ?? []} clusters={[...new Set((runtimes.data ?? []).flatMap((r) => r.clusters.map((c) => c.name)))]} serverError={filterError} />
      {state.unreachable.length > 0 && (
        <div className="notice notice-warning" role="status" data-testid="apps-unreachable">
          <span>
            Not included: the applications of{' '}
            {state.unreachable.map((u, i) => (
              <span key={u.runtime}>
                {i > 0 && ', '}
                <Link to={runtimePath(u.runtime)}>{u.runtime}</Link> <span className="muted">({u.reason})</span>
              </span>
            ))}
            .
          </span>
        </div>
      )}
      {state.error !== undefined && first && !filterError ? (
        <ErrorState error={state.error} onRetry={() => setNonce((n) => n + 1)} />
      ) : first && state.loading ? (
        <LoadingRows rows={8} label="Loading applications" />
      ) : first && !filterError ? (
        <EmptyState
          title={filtered ? 'No applications match these filters' : 'No applications yet'}
          action={
            filtered ? (
              <button type="button" className="button" onClick={() => navigate(APPLICATIONS_PATH)}>
                Clear filters
              </button>
            ) : noRuntimes ? (
              <Link to="/runtimes" className="button">
                Add a runtime
              </Link>
            ) : (
              canWrite && (
                <button type="button" className="button" onClick={() => setCreating(true)}>
                  New application
                </button>
              )
            )
          }
        >
          {!filtered &&
            (noRuntimes ? (
              <p>Applications run in a runtime. Add one first; <code>freshet up</code> runs one named local.</p>
            ) : (
              <p>
                Create one with <strong>New application</strong>, or from an Argo CD Application file with <code>freshet app create -f app.yaml</code> (or from flags: <code>freshet app create NAME --repo URL --path P …</code>), or
                commit it under <code>apps/</code> in the runtime's installation repository.
              </p>
            ))}
        </EmptyState>
      ) : first ? null : (
        <>
          <div className="list-status muted small" aria-live="polite">
            {state.rows.length.toLocaleString('en-US')} application{state.rows.length === 1 ? '' : 's'}
            {state.done ? '' : ' loaded · more load as you scroll'}
            {state.loading && <Spinner label="Loading more applications" />}
          </div>
          <VirtualList
            label="Applications"
            items={state.rows}
            rowHeight={ROW_HEIGHT}
            maxHeight="max(300px, calc(100vh - 400px))"
            headerHeight={36}
            rowKey={(a) => a.id}
            hasMore={!state.done && state.error === undefined}
            onEndReached={loadMore}
            header={
              <div className="vrow vrow-head apps-grid" role="row" aria-rowindex={1}>
                <span role="columnheader">Name</span>
                <span role="columnheader">Runtime</span>
                <span role="columnheader">Project</span>
                <span role="columnheader">Sync</span>
                <span role="columnheader">Health</span>
                <span role="columnheader">Revision</span>
                <span role="columnheader">Destination</span>
                <span role="columnheader">Reconciled</span>
              </div>
            }
            renderRow={(a) => <AppRow a={a} clusters={clustersOf.get(a.runtime)} />}
            footer={
              state.error !== undefined && (
                <div className="vlist-footer">
                  <ErrorNote error={state.error} />
                  <button type="button" className="button button-small" onClick={() => fetchPage(state.next, 'more')}>
                    Try again
                  </button>
                </div>
              )
            }
          />
        </>
      )}
      {creating && (
        <Suspense fallback={null}>
          <NewApplicationDialog runtimes={runtimes.data ?? []} initialRuntime={filter.runtime} onClose={() => setCreating(false)} />
        </Suspense>
      )}
    </div>
  );
}

function AppRow({ a, clusters }: { a: AppSummary; clusters?: { name: string; server: string }[] }) {
  const msg = subject(a.commit?.message);
  const labels = a.labels.map((l) => `${l.key}=${l.value}`).join(' ');
  // "Type: message": the type on the badge, the whole as its tooltip and for screen readers.
  const problem = a.problem ? { type: a.problem.split(':')[0], message: a.problem.slice(a.problem.indexOf(':') + 1).trim() } : undefined;
  return (
    <div className="apps-grid" data-testid={`app-row-${a.runtime}-${a.name}`} data-sync={a.syncStatus} data-health={a.healthStatus}>
      <span role="cell" className="cell-2">
        <Link to={appPath(a.runtime, a.name)} className="strong ellipsis">
          {a.name}
        </Link>
        <span className="muted small ellipsis" title={labels}>
          {labels || '\u00a0'}
        </span>
      </span>
      <span role="cell" className="ellipsis">
        {a.runtime}
      </span>
      <span role="cell" className="ellipsis muted">
        {a.project}
      </span>
      <span role="cell" className="cell-2">
        <SyncBadge status={a.syncStatus} />
        {problem && (
          // A permanent condition is a problem with its reason, not a state to wait out.
          <span className="badge badge-danger app-problem" title={a.problem ?? undefined} data-testid="app-problem">
            <span aria-hidden="true">⚠ </span>
            {problemLabel(problem.type)}
            <span className="visually-hidden">
              {' '}
              ({problem.type}: {problem.message})
            </span>
          </span>
        )}
      </span>
      <span role="cell">
        <HealthBadge status={a.healthStatus} message={a.healthMessage} />
      </span>
      <span role="cell" className="cell-2" title={[a.revision, a.commit?.author, a.commit?.message].filter(Boolean).join(' · ')}>
        <span className="ellipsis">
          {a.revision ? <code>{shortSha(a.revision)}</code> : <span className="muted">—</span>}
          {a.targetRevision && <span className="muted small"> {a.targetRevision}</span>}
        </span>
        <span className="muted small ellipsis">{msg || '\u00a0'}</span>
      </span>
      <span role="cell" className="cell-2" title={[a.destination.server ?? a.destination.name, a.destination.namespace].filter(Boolean).join(' ')}>
        <span className="ellipsis">{clusterName(a.destination, clusters) || '—'}</span>
        <span className="muted small ellipsis">{a.destination.namespace || '\u00a0'}</span>
      </span>
      <span role="cell" className="ellipsis muted" title={formatTime(a.reconciledAt)}>
        {a.reconciledAt ? relativeTime(a.reconciledAt) : 'not yet'}
      </span>
    </div>
  );
}

interface FilterForm {
  runtime: string;
  cluster: string;
  health: string;
  sync: string;
  project: string;
  labels: string;
  search: string;
}

function Filters({ initial, runtimes, clusters, serverError }: { initial: AppFilter; runtimes: string[]; clusters: string[]; serverError?: ApiError }) {
  const [f, setF] = useState<FilterForm>({
    runtime: initial.runtime ?? '',
    cluster: initial.cluster ?? '',
    health: initial.health ?? '',
    sync: initial.sync ?? '',
    project: initial.project ?? '',
    labels: initial.labels.join(', '),
    search: initial.search ?? '',
  });
  const [labelsError, setLabelsError] = useState<string>();
  const set = (k: keyof FilterForm) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const labels = splitLabels(f.labels);
    const bad = labels.map(labelError).find(Boolean);
    setLabelsError(bad);
    if (bad) return;
    navigate(APPLICATIONS_PATH + appFilterQuery({ ...f, labels }));
  };
  const runtimeOptions = initial.runtime && !runtimes.includes(initial.runtime) ? [...runtimes, initial.runtime] : runtimes;
  return (
    <form className="filters" onSubmit={submit} role="search" aria-label="Filter applications">
      <Field label="Search">
        <input type="search" name="search" value={f.search} onChange={set('search')} placeholder="name, repository, path" autoComplete="off" />
      </Field>
      <Field label="Runtime">
        <select name="runtime" value={f.runtime} onChange={set('runtime')}>
          <option value="">Any runtime</option>
          {runtimeOptions.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Cluster">
        <input type="search" name="cluster" list="app-clusters" value={f.cluster} onChange={set('cluster')} placeholder="any cluster" autoComplete="off" />
      </Field>
      <datalist id="app-clusters">
        {clusters.map((c) => (
          <option key={c} value={c} />
        ))}
      </datalist>
      <Field label="Sync">
        <select name="sync" value={f.sync} onChange={set('sync')}>
          <option value="">Any sync status</option>
          {syncCodes.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Health">
        <select name="health" value={f.health} onChange={set('health')}>
          <option value="">Any health</option>
          {healthStatuses.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Project">
        <input type="search" name="project" value={f.project} onChange={set('project')} placeholder="any project" autoComplete="off" />
      </Field>
      <Field label="Labels" hint="key=value, comma-separated" error={labelsError}>
        <input type="search" name="labels" value={f.labels} onChange={set('labels')} placeholder="team=web" autoComplete="off" spellCheck={false} />
      </Field>
      <div className="filters-buttons">
        <button type="submit" className="button button-primary">
          Apply
        </button>
        <button type="button" className="button" onClick={() => navigate(APPLICATIONS_PATH)} disabled={!isAppFiltered(initial)}>
          Reset
        </button>
      </div>
      {serverError && <ErrorNote error={serverError} />}
    </form>
  );
}
