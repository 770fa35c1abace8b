// GitOps applications of every runtime of the account: filters in the URL, pages loaded from
// the server as the virtualised list scrolls, refreshed quietly while only the first page is
// loaded. The list comes from GraphQL, or from each runtime's app-proxy on a server whose
// GraphQL has no applications yet (see lib/appList.ts). Shown as a table or as tiles
// (?view=tiles); above it a summary bar counts applications by health and sync, each count a
// toggle of that filter (applied here at once when the page holds every application of the
// other filters, i.e. from the app-proxies; asked of the server otherwise). Each application
// can be synced and refreshed from its row or tile.
import { Suspense, lazy, useCallback, useEffect, useMemo, useRef, useState, type FormEvent, type ReactNode } from 'react';
import { ApiError, errorMessage } from '../api/client';
import { appProxy, healthStatuses, listRuntimeRefs, syncCodes, type AppSummary } from '../api/apps';
import { Link, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { AppFacetBar } from '../components/AppFacetBar';
import { AppActions, AppTile, ProblemBadge, type AppAction, type AppRowProps } from '../components/AppTile';
import { HealthBadge, SyncBadge } from '../components/AppStatus';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorNote, ErrorState, LoadingRows, Spinner } from '../components/States';
import { Toast, type ToastMessage } from '../components/Toast';
import { VirtualList } from '../components/VirtualList';
import {
  appFilterFromParams,
  appListHref,
  appViewFromParams,
  isAppFiltered,
  labelError,
  matchesFacets,
  splitLabels,
  toggleFacet,
  withoutFacets,
  type AppFilter,
  type AppView,
  type Facet,
} from '../lib/appFilters';
import { loadAppFacets, loadAppPage, type AppSource, type Unreachable } from '../lib/appList';
import { appPath, clusterName, facetCounts, phaseTone, subject, summaryFromProxy, type AppFacets } from '../lib/apps';
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
/** Tiles drawn at first, and added by "Show more". */
const TILE_BATCH = 60;

interface ListState {
  /** From GraphQL: the rows the server filtered; from the app-proxies: every match but the facets (`unfaceted`). */
  rows: AppSummary[];
  next?: string;
  loading: boolean;
  error?: unknown;
  done: boolean;
  source?: AppSource;
  unreachable: Unreachable[];
  pages: number;
  /** The rows hold every application of the other filters: health and sync are applied here. */
  unfaceted: boolean;
}

const initial: ListState = { rows: [], loading: true, done: false, unreachable: [], pages: 0, unfaceted: false };

type Action = AppAction;

export default function Applications() {
  const me = useMe();
  const canWrite = me.role !== 'viewer';
  const [creating, setCreating] = useState(false);
  const { search } = useLocation();
  const params = new URLSearchParams(search);
  const filter = appFilterFromParams(params);
  const view = appViewFromParams(params);
  const key = JSON.stringify(filter);
  const baseKey = JSON.stringify(withoutFacets(filter));
  const runtimes = useResource((signal) => listRuntimeRefs(signal), []);
  const [state, setState] = useState<ListState>(initial);
  const [serverFacets, setServerFacets] = useState<AppFacets>();
  const [nonce, setNonce] = useState(0);
  const [busyRows, setBusyRows] = useState<Record<string, Action>>({});
  const [toast, setToast] = useState<ToastMessage>();
  // What is being fetched now: a reset or the next page wins over a quiet refresh in flight.
  const busy = useRef<'reset' | 'more' | 'quiet' | undefined>(undefined);
  const ctl = useRef<AbortController | null>(null);
  const facetCtl = useRef<AbortController | null>(null);
  // The filter without facets whose every application the state holds (from the app-proxies).
  const held = useRef<string | undefined>(undefined);
  const seenNonce = useRef(nonce);

  const fetchPage = useCallback(
    async (after: string | undefined, mode: 'reset' | 'more' | 'quiet') => {
      if (busy.current && mode !== 'reset' && !(mode === 'more' && busy.current === 'quiet')) return;
      ctl.current?.abort();
      const c = new AbortController();
      ctl.current = c;
      busy.current = mode;
      const f = JSON.parse(key) as AppFilter;
      if (mode === 'reset') {
        held.current = undefined;
        setState(initial);
      } else if (mode === 'more') setState((s) => ({ ...s, loading: true, error: undefined }));
      // The summary bar's counts, from the server, beside the rows (not for further pages,
      // and not cancelled by them: only by the next count).
      if (mode !== 'more') {
        facetCtl.current?.abort();
        const fc = new AbortController();
        facetCtl.current = fc;
        loadAppFacets(f, fc.signal)
          .catch(() => undefined)
          .then((counts) => {
            if (!fc.signal.aborted) setServerFacets(counts);
          });
      }
      try {
        const page = await loadAppPage(f, PAGE, after, c.signal);
        if (c.signal.aborted) return;
        const unfaceted = !!page.unfaceted;
        held.current = unfaceted ? JSON.stringify(withoutFacets(f)) : undefined;
        setState((s) => ({
          rows: page.unfaceted ?? (mode === 'more' ? appendUnique(s.rows, page.items) : page.items),
          next: page.nextCursor,
          loading: false,
          done: !page.nextCursor,
          source: page.source,
          unreachable: page.unreachable,
          pages: mode === 'more' ? s.pages + 1 : 1,
          unfaceted,
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

  // A new filter is asked for, unless only the facets changed and the page holds every
  // application of the rest: then the rows below are filtered and counted here, at once.
  useEffect(() => {
    const retry = seenNonce.current !== nonce;
    seenNonce.current = nonce;
    if (!retry && held.current === baseKey) return;
    fetchPage(undefined, 'reset');
  }, [fetchPage, nonce, baseKey]);
  useEffect(
    () => () => {
      ctl.current?.abort();
      facetCtl.current?.abort();
    },
    [],
  );

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

  const { health, sync } = filter;
  const rows = useMemo(() => (state.unfaceted ? state.rows.filter((a) => matchesFacets(a, { health, sync })) : state.rows), [state.rows, state.unfaceted, health, sync]);
  const counts = useMemo(() => (state.unfaceted ? facetCounts(state.rows, { health, sync }) : state.source === 'graphql' ? serverFacets : undefined), [state.rows, state.unfaceted, state.source, serverFacets, health, sync]);

  const toggle = (facet: Facet, status: string) => navigate(appListHref(toggleFacet(filter, facet, status), view));
  const setView = (v: AppView) => navigate(appListHref(filter, v), { replace: true });

  // Sync or refresh one application through its runtime's app-proxy, then show it as the
  // runtime answers now.
  const act = async (kind: Action, a: AppSummary) => {
    setBusyRows((b) => ({ ...b, [a.id]: kind }));
    try {
      let msg: ToastMessage;
      if (kind === 'refresh') {
        const fresh = await appProxy.refresh(a.runtime, a.name, false);
        replaceRow(a, summaryFromProxy(a.runtime, fresh));
        msg = { text: `Refreshed ${a.name}: ${fresh.status.sync || 'Unknown'}, ${fresh.status.health?.status || 'Unknown'}.`, tone: 'success' };
      } else {
        const r = await appProxy.sync(a.runtime, a.name, {});
        const tone = phaseTone(r.phase);
        msg = { text: `Sync of ${a.name}: ${r.phase}${r.message ? ` (${r.message})` : ''}.`, tone: tone === 'neutral' ? 'info' : tone };
        replaceRow(a, summaryFromProxy(a.runtime, await appProxy.get(a.runtime, a.name)));
      }
      setToast(msg);
    } catch (e) {
      setToast({ text: `${kind === 'sync' ? 'Sync' : 'Refresh'} of ${a.name} failed: ${errorMessage(e)}`, tone: 'danger' });
    } finally {
      setBusyRows(({ [a.id]: _, ...rest }) => rest);
    }
  };
  const replaceRow = (old: AppSummary, fresh: AppSummary) =>
    setState((s) => ({ ...s, rows: s.rows.map((r) => (r.runtime === old.runtime && r.name === old.name ? { ...r, ...fresh, id: r.id } : r)) }));

  const filtered = isAppFiltered(filter);
  const first = rows.length === 0;
  const filterError = state.error instanceof ApiError && state.error.code === 'invalid_argument' ? state.error : undefined;
  const clustersOf = new Map((runtimes.data ?? []).map((r) => [r.name, r.clusters]));
  const noRuntimes = runtimes.data?.length === 0;
  const rowProps = (a: AppSummary) => ({ a, clusters: clustersOf.get(a.runtime), canWrite, busy: busyRows[a.id], onAction: act });

  return (
    <div data-page="applications" data-source={state.source} data-view={view}>
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
      <Filters key={key} initial={filter} view={view} runtimes={runtimes.data?.map((r) => r.name) ?? []} clusters={[...new Set((runtimes.data ?? []).flatMap((r) => r.clusters.map((c) => c.name)))]} serverError={filterError} />
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
      <div className="apps-toolbar">
        <AppFacetBar counts={counts} health={health} sync={sync} onToggle={toggle} busy={state.loading} />
        <div className="segmented" role="radiogroup" aria-label="View">
          {(['table', 'tiles'] as const).map((v) => (
            <label key={v} className={view === v ? 'segment segment-active' : 'segment'}>
              <input type="radio" name="apps-view" className="visually-hidden" checked={view === v} onChange={() => setView(v)} /> {v === 'table' ? 'Table' : 'Tiles'}
            </label>
          ))}
        </div>
      </div>
      <Toast message={toast} onDone={() => setToast(undefined)} />
      {state.error !== undefined && first && !filterError ? (
        <ErrorState error={state.error} onRetry={() => setNonce((n) => n + 1)} />
      ) : first && state.loading ? (
        <LoadingRows rows={8} label="Loading applications" />
      ) : first && !filterError ? (
        <EmptyState
          title={filtered ? 'No applications match these filters' : 'No applications yet'}
          action={
            filtered ? (
              <button type="button" className="button" onClick={() => navigate(appListHref({ labels: [] }, view))}>
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
            {rows.length.toLocaleString('en-US')} application{rows.length === 1 ? '' : 's'}
            {state.done ? '' : ' loaded · more load as you scroll'}
            {state.loading && <Spinner label="Loading more applications" />}
          </div>
          {view === 'tiles' ? (
            <AppTiles
              key={key}
              items={rows}
              hasMore={!state.done && state.error === undefined}
              loading={state.loading}
              onMore={loadMore}
              render={(a) => <AppTile {...rowProps(a)} />}
              error={state.error}
              onRetry={() => fetchPage(state.next, 'more')}
            />
          ) : (
            <VirtualList
              label="Applications"
              items={rows}
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
                  <span role="columnheader">
                    <span className="visually-hidden">Actions</span>
                  </span>
                </div>
              }
              renderRow={(a) => <AppRow {...rowProps(a)} />}
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
          )}
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

function AppRow(p: AppRowProps) {
  const { a, clusters } = p;
  const msg = subject(a.commit?.message);
  const labels = a.labels.map((l) => `${l.key}=${l.value}`).join(' ');
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
        <ProblemBadge problem={a.problem} />
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
      <span role="cell">
        <AppActions {...p} />
      </span>
    </div>
  );
}

/** The tiles: a batch at a time ("Show more"), the next page asked for when the batch runs out. */
function AppTiles({
  items,
  hasMore,
  loading,
  onMore,
  render,
  error,
  onRetry,
}: {
  items: AppSummary[];
  hasMore: boolean;
  loading: boolean;
  onMore: () => void;
  render: (a: AppSummary) => ReactNode;
  error?: unknown;
  onRetry: () => void;
}) {
  const [shown, setShown] = useState(TILE_BATCH);
  const more = () => {
    if (shown >= items.length && hasMore) onMore();
    setShown((n) => n + TILE_BATCH);
  };
  return (
    <>
      <ul className="app-tiles" aria-label="Applications" data-testid="app-tiles">
        {items.slice(0, shown).map((a) => (
          <li key={a.id}>{render(a)}</li>
        ))}
      </ul>
      {error !== undefined ? (
        <div className="vlist-footer">
          <ErrorNote error={error} />
          <button type="button" className="button button-small" onClick={onRetry}>
            Try again
          </button>
        </div>
      ) : (
        (shown < items.length || hasMore) && (
          <div className="app-tiles-more">
            <button type="button" className="button" onClick={more} disabled={loading}>
              Show more
            </button>
            <span className="muted small">
              {Math.min(shown, items.length).toLocaleString('en-US')} of {items.length.toLocaleString('en-US')}
              {hasMore ? '+' : ''} shown
            </span>
          </div>
        )
      )}
    </>
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

function Filters({ initial, view, runtimes, clusters, serverError }: { initial: AppFilter; view: AppView; runtimes: string[]; clusters: string[]; serverError?: ApiError }) {
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
    navigate(appListHref({ ...f, labels }, view));
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
        <button type="button" className="button" onClick={() => navigate(appListHref({ labels: [] }, view))} disabled={!isAppFiltered(initial)}>
          Reset
        </button>
      </div>
      {serverError && <ErrorNote error={serverError} />}
    </form>
  );
}
