import { useEffect, useState, type FormEvent } from 'react';
import { builds, pipelines } from '../api/ci';
import { Link, href, navigate, useLocation } from '../app/router';
import { BuildTable } from '../components/BuildTable';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { ListPager } from '../components/Pager';
import { ErrorNote } from '../components/States';
import { buildStatuses, isActive, statusLabel } from '../lib/builds';
import { useResource } from '../lib/useResource';
import { usePagedList } from '../lib/usePagedList';
import { useNow } from '../lib/useNow';
import { ApiError } from '../api/client';

/** How often a page with running builds asks for their state. */
const POLL_MS = 3000;

export interface BuildListFilter {
  pipeline?: string;
  status?: string;
  branch?: string;
}

export function buildFilterFromParams(p: URLSearchParams): BuildListFilter {
  const status = p.get('status') ?? '';
  return {
    pipeline: p.get('pipeline')?.trim() || undefined,
    status: (buildStatuses as readonly string[]).includes(status) ? status : undefined,
    branch: p.get('branch')?.trim() || undefined,
  };
}

export default function Builds() {
  const { search } = useLocation();
  const filter = buildFilterFromParams(new URLSearchParams(search));
  const key = JSON.stringify(filter);
  const list = usePagedList((o, signal) => builds.list({ ...filter, ...o }, signal), [key]);
  const items = list.data?.items ?? [];
  const anyActive = items.some((b) => isActive(b.status));
  const now = useNow(anyActive);
  const filtered = !!(filter.pipeline || filter.status || filter.branch);

  // While builds on this page run, refresh them quietly.
  useEffect(() => {
    if (!anyActive) return;
    const t = setInterval(() => list.reload({ quiet: true }), POLL_MS);
    return () => clearInterval(t);
  }, [anyActive, list.reload]);

  const filterError = list.error instanceof ApiError && (list.error.code === 'not_found' || list.error.code === 'invalid_argument') && filtered ? list.error : undefined;

  return (
    <div data-page="builds">
      <PageHeader
        title="Builds"
        actions={
          <Link to="/pipelines" className="button">
            Pipelines
          </Link>
        }
      >
        Every run of every pipeline, newest first. Open one for its steps and live log.
      </PageHeader>
      <BuildFilters key={key} initial={filter} />
      {filterError ? (
        <ErrorNote error={filterError} />
      ) : (
        <BuildTable
          list={list}
          now={now}
          pager={<ListPager list={list} noun="builds" one="build" />}
          placeholder={{ label: 'Loading builds', rows: 8 }}
          empty={{
            title: filtered ? 'No builds match these filters' : list.page.after ? 'No builds on this page' : 'No builds yet',
            body: !filtered && 'Run a pipeline by hand, or add a git or cron trigger to it.',
            action: filtered ? (
              <button type="button" className="button" onClick={() => navigate('/builds')}>
                Clear filters
              </button>
            ) : (
              <Link to="/pipelines" className="button">
                Run a pipeline
              </Link>
            ),
          }}
        />
      )}
    </div>
  );
}

function BuildFilters({ initial }: { initial: BuildListFilter }) {
  const [f, setF] = useState({ pipeline: initial.pipeline ?? '', status: initial.status ?? '', branch: initial.branch ?? '' });
  // Pipeline names to pick from (the first 200; any other can be typed).
  const names = useResource((signal) => pipelines.list({ limit: 200 }, signal), []);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    navigate(href('/builds', { pipeline: f.pipeline.trim(), status: f.status, branch: f.branch.trim() }));
  };
  return (
    <form className="filters" onSubmit={submit} role="search" aria-label="Filter builds">
      <Field label="Pipeline" hint="project/name">
        <input type="search" name="pipeline" list="pipeline-names" value={f.pipeline} onChange={(e) => setF({ ...f, pipeline: e.target.value })} placeholder="any pipeline" autoComplete="off" />
      </Field>
      <datalist id="pipeline-names">
        {names.data?.items.map((p) => (
          <option key={p.id} value={p.fullName} />
        ))}
      </datalist>
      <Field label="Status">
        <select name="status" value={f.status} onChange={(e) => setF({ ...f, status: e.target.value })}>
          <option value="">Any status</option>
          {buildStatuses.map((s) => (
            <option key={s} value={s}>
              {statusLabel(s)}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Branch">
        <input type="search" name="branch" value={f.branch} onChange={(e) => setF({ ...f, branch: e.target.value })} placeholder="any branch" autoComplete="off" />
      </Field>
      <div className="filters-buttons">
        <button type="submit" className="button button-primary">
          Apply
        </button>
        <button type="button" className="button" onClick={() => navigate('/builds')} disabled={!initial.pipeline && !initial.status && !initial.branch}>
          Reset
        </button>
      </div>
    </form>
  );
}
