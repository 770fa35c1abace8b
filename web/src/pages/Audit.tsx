import { useCallback, useEffect, useRef, useState, type FormEvent } from 'react';
import { ApiError, fieldError } from '../api/client';
import { audit } from '../api/rest';
import { auditActions, auditResults, type AuditEvent } from '../api/types';
import { href, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { StatusBadge } from '../components/Badge';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorNote, ErrorState, LoadingRows, Spinner } from '../components/States';
import { VirtualList } from '../components/VirtualList';
import { filterFromParams, formFromFilter, isFiltered, paramsFromForm, sincePresets, type AuditFilterForm } from '../lib/auditFilters';
import { formatTime } from '../lib/format';
import { appendUnique } from '../lib/pagination';
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
            renderRow={(e) => (
              <div className="audit-grid" data-testid="audit-row" data-action={e.action}>
                <span role="cell" className="nowrap" title={e.time}>
                  {formatTime(e.time)}
                </span>
                <span role="cell" className="ellipsis" title={e.actor}>
                  {e.actor}
                </span>
                <span role="cell" className="ellipsis">
                  <code>{e.action}</code>
                </span>
                <span role="cell" className="ellipsis muted" title={[e.resourceType, e.resourceId, e.detail].filter(Boolean).join(' ')}>
                  {e.resourceType}
                  {e.resourceId ? ` ${e.resourceId}` : ''}
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
            )}
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
    </div>
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
