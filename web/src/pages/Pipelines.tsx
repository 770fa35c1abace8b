import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { builds as buildsApi, pipelines, projects } from '../api/ci';
import { owners } from '../api/governance';
import { OwnerPicker } from '../components/OwnerPicker';
import type { BuildStatsDay, Pipeline, Project } from '../api/types';
import { Sparkline } from '../components/Charts';
import { formatRate, successRate, totals } from '../lib/buildStats';
import { Link, href, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { FormDialog } from '../components/FormDialog';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { ListPager } from '../components/Pager';
import { RunDialog } from '../components/RunDialog';
import { ResourceTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { ErrorNote, Flash } from '../components/States';
import { specOutline } from '../lib/specOutline';
import { usePagedList } from '../lib/usePagedList';
import { useResource } from '../lib/useResource';
import { pipelinePath, resourceNameError } from '../lib/pipelineRefs';

export default function Pipelines() {
  const me = useMe();
  const { search } = useLocation();
  const project = new URLSearchParams(search).get('project') ?? '';
  const list = usePagedList((o, signal) => pipelines.list({ ...o, project: project || undefined }, signal), [project]);
  // Projects for the filter and the forms: the first 1,000.
  const projs = useResource((signal) => projects.list({ limit: 1000 }, signal), []);
  // Every pipeline's last 14 days in one call, for the sparklines; its failure only blanks them.
  const trends = useResource((signal) => buildsApi.stats({ days: TREND_DAYS, byPipeline: true }, signal), []);
  const trendOf = (id: string) => (trends.data ? (trends.data.pipelines?.find((x) => x.pipelineId === id)?.days ?? []) : undefined);
  const [creating, setCreating] = useState(false);
  const [running, setRunning] = useState<Pipeline>();
  const [deleting, setDeleting] = useState(false);
  const [done, setDone] = useState<string>();
  const canEdit = me.role !== 'viewer';
  const noProjects = projs.data !== undefined && projs.data.items.length === 0;

  return (
    <div data-page="pipelines">
      <PageHeader
        title="Pipelines"
        actions={
          <>
            <button type="button" className="button" onClick={() => setCreating(true)} disabled={!canEdit}>
              New project
            </button>
            {noProjects || !canEdit ? (
              <button type="button" className="button button-primary" disabled title={canEdit ? 'Create a project first' : 'Viewers cannot create pipelines'}>
                New pipeline
              </button>
            ) : (
              <Link to={href('/pipelines/new', { project: project || undefined })} className="button button-primary">
                New pipeline
              </Link>
            )}
          </>
        }
      >
        Pipelines run codefresh.yml steps on a runner. Projects group them.
      </PageHeader>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <div className="filters filters-inline" role="search" aria-label="Filter pipelines">
        <Field label="Project">
          <select value={project} onChange={(e) => navigate(href('/pipelines', { project: e.target.value }))} disabled={!projs.data}>
            <option value="">All projects</option>
            {projs.data?.items.map((p) => (
              <option key={p.id} value={p.name}>
                {p.name}
              </option>
            ))}
            {project && projs.data && !projs.data.items.some((p) => p.name === project) && <option value={project}>{project}</option>}
          </select>
        </Field>
        <div className="filters-buttons">
          <Link to={href('/builds', {})} className="button">
            All builds
          </Link>
          {project && projs.data?.items.some((p) => p.name === project) && (
            <span className="owner-inline">
              Owner{' '}
              <OwnerPicker
                what={`project ${project}`}
                owner={projs.data.items.find((p) => p.name === project)?.ownerTeam}
                cannot={canEdit ? undefined : 'viewers cannot change it'}
                save={(team) => owners.setProject(project, team)}
                onSaved={() => projs.reload()}
              />
            </span>
          )}
          {project && canEdit && (
            <button type="button" className="button button-danger-quiet" onClick={() => setDeleting(true)}>
              Delete project {project}
            </button>
          )}
        </div>
      </div>
      <ResourceTable
        list={list}
        pager={<ListPager list={list} noun="pipelines" one="pipeline" />}
        placeholder={{ label: 'Loading pipelines', rows: 6 }}
        empty={
          noProjects
            ? {
                title: 'No projects yet',
                body: 'A project groups pipelines (for example one per repository). Create one, then add a pipeline to it.',
                action: canEdit && (
                  <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
                    Create a project
                  </button>
                ),
              }
            : {
                title: list.page.after ? 'No pipelines on this page' : project ? `No pipelines in ${project} yet` : 'No pipelines yet',
                body: 'Write its steps in the editor; problems are shown as you type.',
                action: canEdit && (
                  <Link to={href('/pipelines/new', { project: project || undefined })} className="button button-primary">
                    Create a pipeline
                  </Link>
                ),
              }
        }
        rowKey={(p) => p.id}
        rowProps={(p) => ({ 'data-testid': `pipeline-${p.fullName}` })}
        columns={[
          { header: 'Pipeline', cellClassName: 'strong', cell: (p) => <Link to={pipelinePath(p)}>{p.name}</Link> },
          {
            header: 'Project',
            cell: (p) => (
              <Link to={href('/pipelines', { project: p.project })} className="muted">
                {p.project}
              </Link>
            ),
          },
          { header: 'Steps', cellClassName: 'muted', cell: (p) => stepSummary(p.spec) },
          { header: `Last ${TREND_DAYS} days`, cellClassName: 'nowrap', cell: (p) => <TrendCell days={trendOf(p.id)} failed={!!trends.error} /> },
          { header: 'Contexts', cellClassName: 'muted ellipsis-cell', cell: (p) => (p.config.contexts?.length ? p.config.contexts.join(', ') : '—') },
          timeColumn('Updated', (p: Pipeline) => p.updatedAt),
          actionsColumn((p: Pipeline) => (
            <>
              <Link to={href('/builds', { pipeline: p.fullName })} className="button button-small">
                Builds
              </Link>{' '}
              <button type="button" className="button button-small" onClick={() => setRunning(p)} disabled={!canEdit} aria-label={`Run ${p.fullName}`}>
                Run
              </button>
            </>
          )),
        ]}
      />
      <CreateProjectDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(p) => {
          projs.reload();
          setDone(`Created project ${p.name}.`);
          navigate(href('/pipelines', { project: p.name }));
        }}
      />
      {running && <RunDialog open pipeline={running} onClose={() => setRunning(undefined)} />}
      <ConfirmDialog
        open={deleting}
        title="Delete project"
        confirmLabel="Delete project"
        danger
        onClose={() => setDeleting(false)}
        onConfirm={async () => {
          await projects.remove(project);
          setDone(`Deleted project ${project}.`);
          projs.reload();
          navigate('/pipelines');
        }}
      >
        <p>
          Delete <strong>{project}</strong> with all its pipelines, their triggers and their builds? This cannot be undone.
        </p>
      </ConfirmDialog>
    </div>
  );
}

/** "4 steps in 2 stages", read from the spec. */
function stepSummary(spec: string): string {
  const o = specOutline(spec);
  if (!o) return '—';
  let n = 0;
  const count = (ns: { children: unknown[] }[]) => {
    for (const x of ns) {
      n++;
      count(x.children as { children: unknown[] }[]);
    }
  };
  count(o.steps);
  return `${n} step${n === 1 ? '' : 's'}${o.stages.length ? ` in ${o.stages.length} stage${o.stages.length === 1 ? '' : 's'}` : ''}`;
}

export function CreateProjectDialog({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (p: Project) => void }) {
  const [name, setName] = useState('');
  const [local, setLocal] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const close = () => {
    setName('');
    setLocal(undefined);
    setError(undefined);
    onClose();
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const err = resourceNameError(name, 'Project name');
    setLocal(err);
    setError(undefined);
    if (err) return;
    setBusy(true);
    try {
      const p = await projects.create(name);
      close();
      onCreated(p);
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog
      open={open}
      title="New project"
      onClose={close}
      busy={busy}
      formId="create-project"
      submitLabel="Create project"
      busyLabel="Creating…"
      onSubmit={submit}
    >
      <Field label="Name" hint="Letters, digits, '.', '_' or '-'; e.g. the repository's name." error={local ?? fieldError(error, 'name')}>
        <input type="text" name="name" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" spellCheck={false} />
      </Field>
      {error !== undefined && !fieldError(error, 'name') && <ErrorNote error={error} />}
    </FormDialog>
  );
}

const TREND_DAYS = 14;

/** A pipeline's success rate per day as a sparkline, with the rate and count in words beside it. */
function TrendCell({ days, failed }: { days?: BuildStatsDay[]; failed: boolean }) {
  if (failed) return <span className="muted small">—</span>;
  if (!days) return <span className="skeleton-text" aria-label="Loading" />;
  const t = totals(days);
  if (t.total === 0) return <span className="muted small">No builds</span>;
  const label = `Success rate over the last ${TREND_DAYS} days: ${formatRate(t.rate)} of ${t.succeeded + t.failed} finished builds (${t.total} in all)`;
  // Days before the first build of the window are padded so every sparkline spans the window.
  const values = Array.from({ length: TREND_DAYS }, (_, i) => {
    const d = days[days.length - TREND_DAYS + i];
    return d ? successRate(d) : undefined;
  });
  return (
    <span className="trend-cell" data-testid="pipeline-trend">
      <Sparkline values={values} label={label} className={t.rate !== undefined && t.rate < 80 ? 'chart-danger' : 'chart-success'} />
      <span className="small" aria-hidden="true">
        {formatRate(t.rate)} · {t.total}
      </span>
    </span>
  );
}
