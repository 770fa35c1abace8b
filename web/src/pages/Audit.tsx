import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from 'react';
import { ApiError, fieldError } from '../api/client';
import { pipelines as pipelinesApi, projects as projectsApi, runners as runnersApi } from '../api/ci';
import { teams as teamsApi } from '../api/governance';
import { apiKeys as apiKeysApi, audit, runtimes as runtimesApi, users as usersApi } from '../api/rest';
import { auditActions, auditResults, type AuditEvent } from '../api/types';
import { Link, href, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { StatusBadge } from '../components/Badge';
import { CopyButton } from '../components/CopyButton';
import { Dialog } from '../components/Dialog';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorNote, ErrorState, LoadingRows, Spinner } from '../components/States';
import { VirtualList } from '../components/VirtualList';
import { actorText, describeActor, describeResource, emptyLookups, type ActorView, type AuditLookups, type ResourceView } from '../lib/auditNames';
import { filterFromParams, formFromFilter, isFiltered, paramsFromForm, sincePresets, type AuditFilterForm } from '../lib/auditFilters';
import { formatTime } from '../lib/format';
import { appendUnique } from '../lib/pagination';
import { useResource } from '../lib/useResource';
import * as v from '../lib/validate';

/** Rows fetched per request as the list scrolls. */
const PAGE = 500;
const ROW_HEIGHT = 38;

interface ListState {
  rows: AuditEvent[];
  next?: string;
  loading: boolean;
  error?: unknown;
  done: boolean;
}

export default function Audit() {
  const me = useMe();
  const { search } = useLocation();
  const filter = filterFromParams(new URLSearchParams(search));
  const key = JSON.stringify(filter);
  const [state, setState] = useState<ListState>({ rows: [], loading: true, done: false });
  const [nonce, setNonce] = useState(0);
  const busy = useRef(false);
  const ctl = useRef<AbortController | null>(null);
  const [open, setOpen] = useState<AuditEvent>();
  const lookups = useAuditLookups(me.accounts);
  // Each row's names and time, worked out once per event while the lookups stay the same: rows
  // scrolled back into view cost nothing more.
  const described = useMemo(() => {
    const cache = new Map<string, { actor: ActorView; res: ResourceView; time: string }>();
    return (e: AuditEvent) => {
      let d = cache.get(e.id);
      if (!d) {
        d = { actor: describeActor(e, lookups), res: describeResource(e, lookups), time: formatTime(e.time) };
        cache.set(e.id, d);
      }
      return d;
    };
  }, [lookups]);

  const fetchPage = useCallback(
    async (after: string | undefined, reset: boolean) => {
      if (busy.current && !reset) return;
      ctl.current?.abort();
      const c = new AbortController();
      ctl.current = c;
      busy.current = true;
      setState((s) => (reset ? { rows: [], loading: true, done: false } : { ...s, loading: true, error: undefined }));
      try {
        const page = await audit.list({ ...JSON.parse(key), limit: PAGE, after }, c.signal);
        if (c.signal.aborted) return;
        setState((s) => ({ rows: appendUnique(reset ? [] : s.rows, page.items), next: page.nextCursor, loading: false, done: !page.nextCursor }));
      } catch (error) {
        if (c.signal.aborted) return;
        setState((s) => ({ ...s, loading: false, error }));
      } finally {
        if (ctl.current === c) busy.current = false;
      }
    },
    [key],
  );

  useEffect(() => {
    fetchPage(undefined, true);
    return () => ctl.current?.abort();
  }, [fetchPage, nonce]);

  const loadMore = useCallback(() => {
    if (!busy.current && state.next && state.error === undefined) fetchPage(state.next, false);
  }, [fetchPage, state.next, state.error]);

  const filtered = isFiltered(filter);
  const first = state.rows.length === 0;
  const filterError = state.error instanceof ApiError && state.error.code === 'invalid_argument' ? state.error : undefined;

  return (
    <div data-page="audit">
      <PageHeader title="Audit log">
        Who did what in {me.account.name}, newest first: logins, and changes to accounts, users and API keys, with refused attempts.
      </PageHeader>
      <Filters key={key} initial={formFromFilter(filter)} serverError={filterError} />
      {state.error !== undefined && first && !filterError ? (
        <ErrorState error={state.error} onRetry={() => setNonce((n) => n + 1)} />
      ) : first && state.loading ? (
        <LoadingRows rows={10} label="Loading audit events" />
      ) : first && !filterError ? (
        <EmptyState
          title={filtered ? 'No events match these filters' : 'No events yet'}
          action={
            filtered && (
              <button type="button" className="button" onClick={() => navigate('/audit')}>
                Clear filters
              </button>
            )
          }
        />
      ) : first ? null : (
        <>
          <div className="list-status muted small" aria-live="polite">
            {state.rows.length.toLocaleString('en-US')} event{state.rows.length === 1 ? '' : 's'}
            {state.done ? '' : ' loaded · more load as you scroll'}
            {state.loading && <Spinner label="Loading more events" />}
          </div>
          <VirtualList
            label="Audit events"
            items={state.rows}
            rowHeight={ROW_HEIGHT}
            maxHeight="max(280px, calc(100vh - 330px))"
            headerHeight={36}
            rowKey={(e) => e.id}
            hasMore={!state.done && state.error === undefined}
            onEndReached={loadMore}
            header={
              <div className="vrow vrow-head audit-grid" role="row" aria-rowindex={1}>
                <span role="columnheader">Time</span>
                <span role="columnheader">Actor</span>
                <span role="columnheader">Action</span>
                <span role="columnheader">Resource</span>
                <span role="columnheader">Result</span>
                <span role="columnheader">Source</span>
                <span role="columnheader">Request</span>
              </div>
            }
            renderRow={(e) => {
              const { actor, res, time } = described(e);
              return (
                <div className="audit-grid" data-testid="audit-row" data-action={e.action}>
                  <span role="cell" className="nowrap" title={e.time}>
                    <button type="button" className="audit-open" onClick={() => setOpen(e)} aria-label={`Details of ${e.action} at ${time}`} aria-haspopup="dialog">
                      {time}
                    </button>
                  </span>
                  <span role="cell" className="ellipsis" title={actorText(actor)} data-testid="audit-actor">
                    {actor.label}
                    {actor.kind === 'apikey' && <span className="muted small audit-actor-sub">key {actor.key}</span>}
                    {actor.kind === 'runtime' && <span className="muted small audit-actor-sub">via {actor.runtime}</span>}
                  </span>
                  <span role="cell" className="ellipsis">
                    <code>{e.action}</code>
                  </span>
                  <span role="cell" className="ellipsis muted" title={[res.type, res.name, res.id && res.id !== res.name ? `(${res.id})` : '', e.detail].filter(Boolean).join(' ')}>
                    {res.type}{' '}
                    {res.name && (res.href ? <Link to={res.href}>{res.name}</Link> : <span>{res.name}</span>)}
                    {e.detail ? ` · ${e.detail}` : ''}
                  </span>
                  <span role="cell">
                    <StatusBadge value={e.result} />
                  </span>
                  <span role="cell" className="ellipsis muted">
                    {e.sourceIp ?? ''}
                  </span>
                  <span role="cell" className="ellipsis muted small">
                    <code>{e.requestId ?? ''}</code>
                  </span>
                </div>
              );
            }}
            footer={
              state.error !== undefined && (
                <div className="vlist-footer">
                  <ErrorNote error={state.error} />
                  <button type="button" className="button button-small" onClick={() => fetchPage(state.next, false)}>
                    Try again
                  </button>
                </div>
              )
            }
          />
        </>
      )}
      <Dialog open={!!open} title="Audit event" onClose={() => setOpen(undefined)} drawer>
        {open && <AuditDetail event={open} lookups={lookups} />}
      </Dialog>
    </div>
  );
}

/**
 * The account's users, keys, runtimes, pipelines, projects, runners and teams, read once to name the
 * actors and resources of the events. A list that cannot be read leaves its IDs as they are.
 */
function useAuditLookups(accounts: readonly { id: string; name: string }[]): AuditLookups {
  const r = useResource(async (signal) => {
    const quiet = <T,>(p: Promise<T>) => p.catch(() => undefined);
    const [us, ks, rts, pls, prs, rns, tms] = await Promise.all([
      quiet(usersApi.list({ limit: 500 }, signal)),
      quiet(apiKeysApi.list({ limit: 500 }, signal)),
      quiet(runtimesApi.list(signal)),
      quiet(pipelinesApi.list({ limit: 500 }, signal)),
      quiet(projectsApi.list({ limit: 500 }, signal)),
      quiet(runnersApi.list(signal)),
      quiet(teamsApi.list(signal)),
    ]);
    const l = emptyLookups();
    for (const u of us?.items ?? []) l.users.set(u.id, { email: u.email, name: u.name });
    for (const k of ks?.items ?? []) l.apiKeys.set(k.id, k.name);
    for (const x of rts?.items ?? []) {
      l.runtimes.set(x.id, x.name);
      l.runtimes.set(x.name, x.name);
    }
    for (const p of pls?.items ?? []) {
      l.pipelines.set(p.id, p.fullName);
      l.pipelines.set(p.fullName, p.fullName);
    }
    for (const p of prs?.items ?? []) {
      l.projects.set(p.id, p.name);
      l.projects.set(p.name, p.name);
    }
    for (const x of rns?.items ?? []) l.runners.set(x.id, x.name);
    for (const t of tms?.items ?? []) {
      l.teams.set(t.id, t.name);
      l.teams.set(t.name, t.name);
    }
    return l;
  }, []);
  const empty = useMemo(emptyLookups, []);
  const l = r.data ?? empty;
  for (const a of accounts) l.accounts.set(a.id, a.name);
  return l;
}

/** Every field of one event, named; the actor and resource resolved and linked. */
export function AuditDetail({ event: e, lookups }: { event: AuditEvent; lookups: AuditLookups }) {
  const actor = describeActor(e, lookups);
  const res = describeResource(e, lookups);
  return (
    <dl className="props" data-testid="audit-detail">
      <dt>Time</dt>
      <dd>
        {formatTime(e.time)} <span className="muted small">({e.time})</span>
      </dd>
      <dt>Actor</dt>
      <dd>
        {actor.href ? <Link to={actor.href}>{actor.label}</Link> : actor.label}
        {actor.email && <span className="muted"> &lt;{actor.email}&gt;</span>}
        {actor.kind === 'apikey' && (
          <div className="muted small">
            with API key <Link to="/api-keys">{actor.key}</Link>
          </div>
        )}
        {actor.kind === 'runtime' && (
          <div className="muted small">
            through the ingress of runtime <Link to={`/runtimes/${encodeURIComponent(actor.runtime ?? '')}`}>{actor.runtime}</Link>
          </div>
        )}
        {e.actorId && (
          <div className="muted small">
            user ID <code>{e.actorId}</code>
          </div>
        )}
      </dd>
      <dt>Action</dt>
      <dd>
        <code>{e.action}</code>
      </dd>
      <dt>Resource</dt>
      <dd>
        {res.type} {res.name && (res.href ? <Link to={res.href}>{res.name}</Link> : res.name)}
        {res.id && (
          <div className="muted small">
            ID <code>{res.id}</code>
          </div>
        )}
      </dd>
      <dt>Result</dt>
      <dd>
        <StatusBadge value={e.result} />
      </dd>
      <dt>Detail</dt>
      <dd>{e.detail || <span className="muted">—</span>}</dd>
      <dt>Source IP</dt>
      <dd>{e.sourceIp ? <code>{e.sourceIp}</code> : <span className="muted">—</span>}</dd>
      <dt>Request ID</dt>
      <dd>
        {e.requestId ? (
          <>
            <code>{e.requestId}</code> <CopyButton text={e.requestId} label="Copy request ID" />
          </>
        ) : (
          <span className="muted">—</span>
        )}
      </dd>
      <dt>Event ID</dt>
      <dd>
        <code>{e.id}</code>
      </dd>
    </dl>
  );
}

function Filters({ initial, serverError }: { initial: AuditFilterForm; serverError?: ApiError }) {
  const [f, setF] = useState(initial);
  const [errors, setErrors] = useState<v.Errors<'since'>>({});
  const submit = (e: FormEvent) => {
    e.preventDefault();
    const errs = { since: f.since === 'custom' ? (f.sinceCustom.trim() ? v.timeBound(f.sinceCustom, 'Since') : 'Give a time or a duration ago.') : undefined };
    setErrors(errs);
    if (v.hasErrors(errs)) return;
    navigate(href('/audit', paramsFromForm(f)));
  };
  const set = (k: keyof AuditFilterForm) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const sinceError = errors.since ?? fieldError(serverError, 'since');
  return (
    <form className="filters" onSubmit={submit} role="search" aria-label="Filter audit events">
      <Field label="Actor" error={fieldError(serverError, 'actor')}>
        <input type="search" name="actor" value={f.actor} onChange={set('actor')} placeholder="email or user ID" />
      </Field>
      <Field label="Action" error={fieldError(serverError, 'action')}>
        <input type="search" name="action" value={f.action} onChange={set('action')} placeholder="e.g. user.*" list="audit-actions" />
      </Field>
      <datalist id="audit-actions">
        {[...new Set(auditActions.map((a) => a.split('.')[0] + '.*'))].concat(auditActions).map((a) => (
          <option key={a} value={a} />
        ))}
      </datalist>
      <Field label="Result" error={fieldError(serverError, 'result')}>
        <select name="result" value={f.result} onChange={set('result')}>
          <option value="">Any result</option>
          {auditResults.map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Since" error={f.since !== 'custom' ? sinceError : undefined}>
        <select name="since" value={f.since} onChange={set('since')}>
          {sincePresets.map((s) => (
            <option key={s.value} value={s.value}>
              {s.label}
            </option>
          ))}
          <option value="custom">Custom…</option>
        </select>
      </Field>
      {f.since === 'custom' && (
        <Field label="Since (time or duration)" error={sinceError}>
          <input type="text" name="sinceCustom" value={f.sinceCustom} onChange={set('sinceCustom')} placeholder="2026-01-02T15:04:05Z or 36h" />
        </Field>
      )}
      <div className="filters-buttons">
        <button type="submit" className="button button-primary">
          Apply
        </button>
        <button type="button" className="button" onClick={() => navigate('/audit')}>
          Clear
        </button>
      </div>
      {serverError && !['actor', 'action', 'result', 'since'].includes(serverError.field ?? '') && <ErrorNote error={serverError} />}
    </form>
  );
}
