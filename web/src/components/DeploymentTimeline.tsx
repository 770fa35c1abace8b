// A timeline of deployment records (docs/analytics.md): each with its revision, trigger and
// result, what made it a failed change, the images it deployed (digest) and — from image
// enrichment — the commits and issues those images were built from; and the commits the
// deployment brought, as its runtime walked the git range (kind range, first, rollback or
// unchanged), each with the issue keys its message names. The Deployments page and the
// application page's Deployments tab show it.
import type { DeployedCommit, DeployedImage, Deployment } from '../api/analytics';
import { shortDigest } from '../api/products';
import { Link } from '../app/router';
import { aftermath, formatSeconds, shortRevision } from '../lib/dora';
import { formatTime, relativeTime } from '../lib/format';
import { Badge } from './Badge';

const triggerWords: Record<string, string> = { 'auto-sync': 'Auto-sync', manual: 'Manual sync', rollback: 'Rollback' };

export function ImageRow({ im }: { im: DeployedImage }) {
  const commits = im.commits ?? [];
  const issues = im.issues ?? [];
  return (
    <li data-testid={`deployed-image-${im.repository}`}>
      <code title={im.digest}>
        {im.repository}
        {im.tags?.length ? `:${im.tags[0]}` : ''}@{shortDigest(im.digest)}
      </code>
      {im.buildId && (
        <>
          {' '}
          · <Link to={`/builds/${encodeURIComponent(im.buildId)}`}>build</Link>
        </>
      )}
      {commits.length > 0 && (
        <ul className="deploy-images" aria-label={`Commits of ${im.repository}`}>
          {commits.map((c) => (
            <li key={c.sha ?? c.message}>
              <code>{(c.sha ?? '').slice(0, 7)}</code> {c.message?.split('\n')[0]}
              {c.author && <span className="muted"> — {c.author}</span>}
              {c.branch && <span className="muted"> on {c.branch}</span>}
            </li>
          ))}
        </ul>
      )}
      {issues.length > 0 && (
        <div className="small" aria-label={`Issues of ${im.repository}`}>
          {issues.map((i) => (
            <span key={i.key} className="deploy-issue" title={i.error || i.title || undefined} data-testid={`issue-${i.key}`}>
              {i.url ? (
                <a href={i.url} rel="noreferrer noopener" target="_blank">
                  {i.key}
                </a>
              ) : (
                <strong>{i.key}</strong>
              )}
              {i.title ? ` ${i.title}` : i.error ? <span className="muted"> ({i.error})</span> : null}
              {i.state && <Badge>{i.state}</Badge>}{' '}
            </span>
          ))}
        </div>
      )}
    </li>
  );
}

/** What the range kind says about a deployment's commits (docs/analytics.md#commits-of-a-deployment). */
export function rangeWords(d: Deployment): string | undefined {
  const r = d.commitRange;
  if (!r) return undefined;
  const n = (d.commits ?? []).filter((c) => c.sources?.includes('git')).length;
  const from = r.from ? ` since ${shortRevision(r.from)}` : '';
  switch (r.kind) {
    case 'range':
      return `${n} commit${n === 1 ? '' : 's'}${from}${r.truncated ? ' (the newest; there were more)' : ''}`;
    case 'first':
      return 'First deployment of the repository: the revision’s own commit';
    case 'rollback':
      return `Rollback to an earlier revision${from ? ` (from ${shortRevision(r.from ?? '')})` : ''}: no new commits`;
    case 'unchanged':
      return 'Same revision as the previous deployment: no new commits';
  }
  return r.kind;
}

function CommitRow({ c }: { c: DeployedCommit }) {
  const issues = c.issues ?? [];
  const sources = c.sources ?? [];
  return (
    <li data-testid={`deployed-commit-${c.sha.slice(0, 7)}`}>
      <code title={c.sha}>{c.sha.slice(0, 7)}</code> {c.message?.split('\n')[0]}
      {c.author && <span className="muted"> — {c.author}</span>}
      {issues.map((k) => (
        <span key={k} className="deploy-issue-key" data-testid={`commit-issue-${k}`}>
          <Badge>{k}</Badge>
        </span>
      ))}
      {sources.length === 1 && sources[0] === 'image' && <span className="muted small"> (from an image)</span>}
    </li>
  );
}

/** The commits a deployment shipped, with the range kind its runtime reported. */
export function DeploymentCommits({ d }: { d: Deployment }) {
  const commits = d.commits ?? [];
  const words = rangeWords(d);
  if (!words && commits.length === 0) return null;
  return (
    <div className="small" data-testid="deployment-commits" data-range={d.commitRange?.kind ?? ''}>
      {words && <span className="muted">{words}</span>}
      {commits.length > 0 && (
        <ul className="deploy-images" aria-label={`Commits of deployment ${shortRevision(d.revision)}`}>
          {commits.map((c) => (
            <CommitRow key={c.sha} c={c} />
          ))}
        </ul>
      )}
    </div>
  );
}

/** One deployment on the timeline. */
export function DeploymentItem({ d, showApp = true }: { d: Deployment; showApp?: boolean }) {
  const after = aftermath(d);
  const images = d.images ?? [];
  return (
    <li className={`timeline-item deploy-item ${d.result === 'succeeded' ? 'timeline-success' : 'timeline-danger'}`} data-result={d.result} data-testid={`deployment-${d.id}`}>
      <div className="timeline-head deploy-head">
        <Badge tone={d.result === 'succeeded' ? 'success' : 'danger'}>{d.result === 'succeeded' ? 'Succeeded' : 'Failed'}</Badge>
        {showApp && (
          <Link to={`/applications/${encodeURIComponent(d.runtime)}/${encodeURIComponent(d.application)}`} className="strong">
            {d.application}
          </Link>
        )}
        <span>
          revision <code title={d.revision}>{shortRevision(d.revision)}</code>
        </span>
        <span className="muted">{triggerWords[d.trigger] ?? d.trigger}{d.user ? ` by ${d.user}` : ''}</span>
        <span className="muted" title={formatTime(d.finishedAt)}>
          {relativeTime(d.finishedAt)}
        </span>
      </div>
      <div className="muted small">
        {d.runtime} · {d.cluster || '—'}/{d.namespace || '—'} · took {formatSeconds(d.durationSeconds)}
        {d.leadTimeSeconds !== undefined && ` · lead time ${formatSeconds(d.leadTimeSeconds)}`}
      </div>
      {d.commit?.message && (
        <div className="small">
          <span className="muted">commit:</span> {d.commit.message.split('\n')[0]}
          {d.commit.author && <span className="muted"> — {d.commit.author}</span>}
        </div>
      )}
      <DeploymentCommits d={d} />
      {d.message && d.result !== 'succeeded' && <div className="small text-danger">{d.message}</div>}
      {after && (
        <div className="small text-warning" data-testid="deployment-aftermath">
          Failed change: {after}
        </div>
      )}
      {images.length > 0 ? (
        <ul className="deploy-images" aria-label="Images deployed">
          {images.map((im) => (
            <ImageRow key={im.repository + im.digest} im={im} />
          ))}
        </ul>
      ) : (
        <div className="muted small">No images recorded: report them from CI with <code>freshet image report</code>.</div>
      )}
    </li>
  );
}

/** A timeline of deployments. */
export function DeploymentTimeline({ items, showApp = true }: { items: Deployment[]; showApp?: boolean }) {
  return (
    <ol className="timeline" aria-label="Deployments, newest first" data-testid="deployment-timeline">
      {items.map((d) => (
        <DeploymentItem key={d.id} d={d} showApp={showApp} />
      ))}
    </ol>
  );
}
