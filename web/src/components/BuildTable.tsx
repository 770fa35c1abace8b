import type { Build } from '../api/types';
import { Link } from '../app/router';
import { shortSha } from '../lib/builds';
import { formatTime, relativeTime } from '../lib/format';
import { BuildStatusBadge, Duration } from './BuildStatus';

/** Builds as a table: status, name, branch, commit, trigger, start and duration. */
export function BuildTable({ items, now, busy, compact }: { items: Build[]; now: number; busy?: boolean; compact?: boolean }) {
  return (
    <table className="table builds-table" aria-busy={busy}>
      <thead>
        <tr>
          <th scope="col" className="col-status">
            Status
          </th>
          <th scope="col">Build</th>
          <th scope="col">Branch</th>
          {!compact && <th scope="col">Commit</th>}
          <th scope="col">Trigger</th>
          <th scope="col">Started</th>
          <th scope="col" className="col-num">
            Duration
          </th>
        </tr>
      </thead>
      <tbody>
        {items.map((b) => (
          <tr key={b.id} data-testid={`build-${b.id}`} data-status={b.status}>
            <td>
              <BuildStatusBadge status={b.status} title={b.reason} />
            </td>
            <td className="ellipsis-cell">
              <Link to={`/builds/${b.id}`} className="strong">
                {b.name}
              </Link>
            </td>
            <td className="ellipsis-cell">{b.branch ? <code>{b.branch}</code> : <span className="muted">—</span>}</td>
            {!compact && (
              <td className="ellipsis-cell muted" title={b.message}>
                {b.sha ? <code>{shortSha(b.sha)}</code> : '—'} {b.message}
              </td>
            )}
            <td className="ellipsis-cell" title={`${b.trigger} by ${b.triggeredBy}`}>
              {b.trigger} <span className="muted">· {b.triggeredBy}</span>
            </td>
            <td className="nowrap" title={formatTime(b.startedAt ?? b.createdAt)}>
              {b.startedAt ? relativeTime(b.startedAt, now) : <span className="muted">{b.status === 'queued' ? `queued ${relativeTime(b.createdAt, now)}` : '—'}</span>}
            </td>
            <td className="col-num nowrap">{b.startedAt ? <Duration start={b.startedAt} end={b.finishedAt} now={now} /> : '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

