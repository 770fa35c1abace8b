import { useEffect, useMemo, useRef, useState } from 'react';
import { builds, pipelines, runners as runnersApi } from '../api/ci';
import type { Build as BuildT, BuildImage, BuildStep, Pipeline } from '../api/types';
import { Link, navigate } from '../app/router';
import { useMe } from '../app/session';
import { BuildGraph } from '../components/BuildGraph';
import { BuildLog, type BuildLogHandle } from '../components/BuildLog';
import { BuildStatusBadge, Duration } from '../components/BuildStatus';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { DataTable } from '../components/ResourceTable';
import { ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import { canRestartFromFailed, isActive, shortSha, statusLabel } from '../lib/builds';
import { formatTime, relativeTime } from '../lib/format';
import { pipelinePathOf } from '../lib/pipelineRefs';
import { byteSize, imageRows, shortDigest } from '../lib/registry';
import { specOutline, stepTitles } from '../lib/specOutline';
import { queueWait } from '../lib/queueWait';
import { Field } from '../components/Field';
import { useNow } from '../lib/useNow';
import { useResource } from '../lib/useResource';

/** How often a running build's state is asked for. */
const POLL_MS = 1000;

export default function Build({ params }: { params: Record<string, string> }) {
  const id = params.id;
  const build = useResource((signal) => builds.get(id, signal), [id]);
  const b = build.data?.id === id ? build.data : undefined;
  const active = b ? isActive(b.status) : false;
  const now = useNow(active);
  const log = useRef<BuildLogHandle>(null);
  const [note, setNote] = useState<string>();

  // Step states change while the build runs: ask every second, quietly.
  const reload = build.reload;
  useEffect(() => {
    if (!active) return;
    const t = setInterval(() => reload({ quiet: true }), POLL_MS);
    return () => clearInterval(t);
  }, [active, reload]);

  // The pipeline's spec tells which steps are parallel groups and the order of the stages.
  const pipeline = useResource((signal) => (b ? pipelines.get(b.pipelineId, signal).catch(() => undefined) : Promise.resolve(undefined)), [b?.pipelineId]);
  const outline = useMemo(() => (pipeline.data ? specOutline(pipeline.data.spec) : undefined), [pipeline.data]);
  const titles = useMemo(() => stepTitles(outline), [outline]);
  // The runners, to name the build's and to say why a queued build waits (viewers may read them).
  const runners = useResource((signal) => runnersApi.list(signal).catch(() => undefined), [b?.status === 'queued', b?.runnerId]);

  useEffect(() => {
    if (b) document.title = `${b.name} · ${b.status} · Freshet`;
  }, [b?.name, b?.status]);

  if (build.error !== undefined && !b) return <ErrorState error={build.error} onRetry={build.reload} />;
  if (!b) {
    return (
      <div data-page="build" aria-busy="true">
        <LoadingRows rows={3} label="Loading build" />
      </div>
    );
  }

  const select = (s: BuildStep) => {
    if (!log.current?.jumpToStep(s.name))
      setNote(['pending', 'skipped', 'not-run'].includes(s.status) ? `Step ${s.name} has no output: it is ${statusLabel(s.status)}.` : `The log does not show step ${s.name} yet.`);
  };

  return (
    <div data-page="build" data-status={b.status}>
      <BuildHeader b={b} now={now} onChanged={() => build.reload({ quiet: true })} runnerName={runners.data?.items.find((r) => r.id === b.runnerId)?.name} />
      {b.status === 'queued' && <QueueNote b={b} pipeline={pipeline.data} runners={runners.data?.items} />}
      <Flash text={note} onDone={() => setNote(undefined)} ms={4000} />
      <section className="panel panel-wide steps-panel" aria-labelledby="steps-title" title="Choose a step to show its output in the log">
        <h2 id="steps-title">Steps</h2>
        {pipeline.loading && pipeline.data === undefined ? (
          // The spec decides the shape of the graph: wait for it (briefly) rather than redraw.
          <div className="graph-placeholder skeleton-row" aria-hidden="true" />
        ) : (
          <BuildGraph steps={b.steps ?? []} outline={outline} active={active} now={now} onSelect={select} titles={titles} />
        )}
      </section>
      {b.images && b.images.length > 0 && <ImagesPanel images={b.images} />}
      <BuildLog key={b.id} ref={log} buildId={b.id} fileName={`${b.name.replace(/[^\w.-]+/g, '_')}.log`} onEnd={() => build.reload({ quiet: true })} steps={b.steps} titles={titles} />
    </div>
  );
}

/**
 * Why a queued build waits: its place in the account's queue, and what the runners and the
 * pipeline's limits say, read from the queued builds, the runners and the pipeline's running builds.
 */
function QueueNote({ b, pipeline, runners }: { b: BuildT; pipeline?: Pipeline; runners?: Parameters<typeof queueWait>[1]['runners'] }) {
  const facts = useResource(
    async (signal) => {
      const [queued, running] = await Promise.all([
        builds.list({ status: 'queued', limit: 500 }, signal),
        Promise.all(['running', 'pending-approval', 'terminating'].map((status) => builds.list({ status, pipeline: b.pipelineId, limit: 500 }, signal))),
      ]);
      return { queued: queued.items, running: running.flatMap((p) => p.items) };
    },
    [b.id, b.status],
  );
  useEffect(() => {
    const t = setInterval(() => facts.reload({ quiet: true }), 3000);
    return () => clearInterval(t);
  }, [facts.reload]);
  if (!facts.data || !runners) return null;
  const w = queueWait(b, { queued: facts.data.queued, runners, pipeline, running: facts.data.running });
  return (
    <section className="notice queue-note" role="status" aria-label="Why it waits" data-testid="queue-wait">
      <strong>Queued{w.position !== undefined ? `: ${w.position} of ${w.of} in the queue` : ''}.</strong>{' '}
      {w.reasons.length ? w.reasons.join(' ') : 'A runner takes it at its next poll.'}
    </section>
  );
}

/** The images the build's steps pushed: a row per tag. */
function ImagesPanel({ images }: { images: BuildImage[] }) {
  return (
    <section className="panel panel-wide" aria-labelledby="images-title" data-testid="build-images">
      <h2 id="images-title">Images</h2>
      <DataTable
        className="table table-compact"
        rows={imageRows(images)}
        rowKey={(r) => r.key}
        rowProps={(r) => ({ 'data-testid': `image-${r.ref}` })}
        columns={[
          { header: 'Image', cellClassName: 'break-all', cell: (r) => <code>{r.ref}</code> },
          {
            header: 'Digest',
            cell: (r) => (
              <code title={r.image.digest} className="muted">
                {shortDigest(r.image.digest)}
              </code>
            ),
          },
          { header: 'Size', className: 'col-num', cell: (r) => byteSize(r.image.size) },
          { header: 'Step', cell: (r) => r.image.step },
          { header: 'Registry', cell: (r) => r.image.registry },
        ]}
      />
    </section>
  );
}

function BuildHeader({ b, now, onChanged, runnerName }: { b: BuildT; now: number; onChanged: () => void; runnerName?: string }) {
  const me = useMe();
  const [busy, setBusy] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [cancelling, setCancelling] = useState(false);
  const [deciding, setDeciding] = useState<'approve' | 'deny'>();
  const [comment, setComment] = useState('');
  const canRun = me.role !== 'viewer';
  const active = isActive(b.status);
  const waiting = (b.steps ?? []).filter((s) => s.status === 'pending-approval');

  const act = async (what: string, fn: () => Promise<BuildT | void>, go?: (nb: BuildT) => void) => {
    setBusy(what);
    setError(undefined);
    try {
      const nb = await fn();
      if (go && nb) go(nb);
      else onChanged();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(undefined);
    }
  };

  const ppath = pipelinePathOf(b.pipeline);
  return (
    <header className="build-header">
      <div className="page-header">
        <div>
          <p className="breadcrumbs small">
            <Link to="/builds">Builds</Link>
            {ppath && (
              <>
                {' / '}
                <Link to={ppath}>{b.pipeline}</Link>
              </>
            )}
          </p>
          <h1 className="build-title">
            <BuildStatusBadge status={b.status} /> <span>{b.name}</span>
          </h1>
          {b.reason && b.status !== 'pending-approval' && <p className="muted page-description">{b.reason}</p>}
        </div>
        <div className="page-actions">
          {active && b.status !== 'terminating' && (
            <button type="button" className="button button-danger-quiet" onClick={() => setCancelling(true)} disabled={!!busy || !canRun}>
              Cancel build
            </button>
          )}
          {!active && canRestartFromFailed(b.status) && (
            <button type="button" className="button" disabled={!!busy || !canRun} onClick={() => act('restart-failed', () => builds.restart(b.id, true), (nb) => navigate(`/builds/${nb.id}`))}>
              {busy === 'restart-failed' ? 'Restarting…' : 'Restart from failed'}
            </button>
          )}
          {!active && (
            <button type="button" className="button button-primary" disabled={!!busy || !canRun} onClick={() => act('restart', () => builds.restart(b.id), (nb) => navigate(`/builds/${nb.id}`))}>
              {busy === 'restart' ? 'Restarting…' : 'Restart'}
            </button>
          )}
        </div>
      </div>
      {b.status === 'pending-approval' && (
        <div className="approval" role="region" aria-label="Approval">
          <div>
            <strong>{statusLabel(b.status).replace(/^w/, 'W')}</strong>
            {waiting.length > 0 && (
              <span className="muted">
                {' '}
                · step {waiting.map((s) => s.name).join(', ')}
                {waiting[0].message && waiting[0].message !== statusLabel(b.status) ? ` · ${waiting[0].message.replace(/^waiting for approval\s*/, '')}` : ''}
              </span>
            )}
          </div>
          <div className="approval-buttons">
            <button type="button" className="button button-danger-quiet" disabled={!!busy || !canRun} onClick={() => setDeciding('deny')} title={canRun ? undefined : 'Viewers cannot decide'}>
              Deny…
            </button>
            <button type="button" className="button button-primary" disabled={!!busy || !canRun} onClick={() => setDeciding('approve')} title={canRun ? undefined : 'Viewers cannot decide'}>
              Approve…
            </button>
          </div>
        </div>
      )}
      <ConfirmDialog
        open={!!deciding}
        title={deciding === 'deny' ? 'Deny build' : 'Approve build'}
        confirmLabel={deciding === 'deny' ? 'Deny' : 'Approve'}
        danger={deciding === 'deny'}
        confirmDisabled={comment.length > 500}
        onClose={() => {
          setDeciding(undefined);
          setComment('');
        }}
        onConfirm={async () => {
          const c = comment.trim().replace(/\s+/g, ' ');
          await (deciding === 'deny' ? builds.deny(b.id, c) : builds.approve(b.id, c));
          setComment('');
          onChanged();
        }}
      >
        <p>
          {deciding === 'deny' ? 'Deny' : 'Approve'} step {waiting.map((s) => s.name).join(', ') || 'waiting'} of <strong>{b.name}</strong>?{' '}
          {deciding === 'deny' ? 'The build stops there and fails.' : 'The build goes on with the steps after it.'}
        </p>
        <Field label="Comment (optional)" hint="Kept in the audit log with your decision." error={comment.length > 500 ? `${comment.length} characters: at most 500.` : undefined}>
          <input type="text" name="approvalComment" value={comment} onChange={(e) => setComment(e.target.value)} autoComplete="off" maxLength={600} />
        </Field>
      </ConfirmDialog>
      {error !== undefined && <ErrorNote error={error} />}
      <dl className="facts">
        <div>
          <dt>Trigger</dt>
          <dd>
            {b.trigger} <span className="muted">by</span> {b.triggeredBy}
          </dd>
        </div>
        <div>
          <dt>Branch</dt>
          <dd>{b.branch ? <code>{b.branch}</code> : <span className="muted">none</span>}</dd>
        </div>
        <div>
          <dt>Revision</dt>
          <dd className="ellipsis" title={[b.repo, b.sha, b.message, b.author].filter(Boolean).join(' · ')}>
            {b.sha ? <code>{shortSha(b.sha)}</code> : <span className="muted">none</span>}
            {b.repo && <span className="muted"> · {b.repo}</span>}
            {b.message && <span> · {b.message}</span>}
            {b.author && <span className="muted"> · {b.author}</span>}
          </dd>
        </div>
        <div>
          <dt>Created</dt>
          <dd title={formatTime(b.createdAt)}>{relativeTime(b.createdAt, now)}</dd>
        </div>
        <div>
          <dt>Duration</dt>
          <dd>
            {b.startedAt ? <Duration start={b.startedAt} end={b.finishedAt} now={now} /> : <span className="muted">not started</span>}
            {b.finishedAt && <span className="muted small"> · ended {relativeTime(b.finishedAt, now)}</span>}
          </dd>
        </div>
        <div>
          <dt>Runner</dt>
          <dd className="ellipsis">
            {b.runnerId ? (
              runnerName ? (
                <Link to="/settings/runners" title={b.runnerId} data-testid="build-runner">
                  {runnerName}
                </Link>
              ) : (
                <code className="small">{b.runnerId}</code>
              )
            ) : (
              <span className="muted">not yet</span>
            )}
            {b.attempt > 1 && <span className="muted"> · attempt {b.attempt}</span>}
          </dd>
        </div>
        {b.restartOf && (
          <div>
            <dt>Restart of</dt>
            <dd>
              <Link to={`/builds/${b.restartOf}`}>earlier build</Link>
            </dd>
          </div>
        )}
      </dl>
      <ConfirmDialog
        open={cancelling}
        title="Cancel build"
        confirmLabel="Cancel build"
        cancelLabel="Keep running"
        danger
        onClose={() => setCancelling(false)}
        onConfirm={async () => {
          await builds.cancel(b.id);
          onChanged();
        }}
      >
        <p>
          Stop <strong>{b.name}</strong>? The runner kills the running step and the build ends as terminated. You can restart it afterwards.
        </p>
      </ConfirmDialog>
    </header>
  );
}
