import type { Build } from '../api/types';
import { Link } from '../app/router';
import { shortSha } from '../lib/builds';
import { formatTime, relativeTime } from '../lib/format';
import { BuildStatusBadge, Duration } from './BuildStatus';
import { ResourceTable, type Column, type ResourceTableProps } from './ResourceTable';

function buildColumns(now: number, compact?: boolean): (Column<Build> | false)[] {
  return [
    { header: 'Status', className: 'col-status', cellClassName: '', cell: (b) => <BuildStatusBadge status={b.status} title={b.reason} /> },
    {
      header: 'Build',
      cellClassName: 'ellipsis-cell',
      cell: (b) => (
        <Link to={`/builds/${b.id}`} className="strong">
          {b.name}
        </Link>
      ),
    },
    { header: 'Branch', cellClassName: 'ellipsis-cell', cell: (b) => (b.branch ? <code>{b.branch}</code> : <span className="muted">—</span>) },
    !compact && {
      header: 'Commit',
      cellClassName: 'ellipsis-cell muted',
      cellProps: (b) => ({ title: [b.message, b.author && `by ${b.author}`].filter(Boolean).join(' — ') }),
      cell: (b) => (
        <>
          {b.sha ? <code>{shortSha(b.sha)}</code> : '—'} <span className="build-commit-msg">{b.message}</span>
          {b.author && <span className="build-commit-author"> · {b.author}</span>}
        </>
      ),
    },
    {
      header: 'Trigger',
      cellClassName: 'ellipsis-cell',
      cellProps: (b) => ({ title: `${b.trigger} by ${b.triggeredBy}` }),
      cell: (b) => (
        <>
          {b.trigger} <span className="muted">· {b.triggeredBy}</span>
        </>
      ),
    },
    {
      header: 'Started',
      cellClassName: 'nowrap',
      cellProps: (b) => ({ title: formatTime(b.startedAt ?? b.createdAt) }),
      cell: (b) => (b.startedAt ? relativeTime(b.startedAt, now) : <span className="muted">{b.status === 'queued' ? `queued ${relativeTime(b.createdAt, now)}` : '—'}</span>),
    },
    { header: 'Duration', className: 'col-num', cellClassName: 'col-num nowrap', cell: (b) => (b.startedAt ? <Duration start={b.startedAt} end={b.finishedAt} now={now} /> : '—') },
  ];
}

/** Builds as a table: status, name, branch, commit, trigger, start and duration. */
export function BuildTable({ now, compact, ...props }: Omit<ResourceTableProps<Build>, 'columns' | 'rowKey' | 'rowProps' | 'className'> & { now: number; compact?: boolean }) {
  return (
    <ResourceTable
      {...props}
      className="table builds-table"
      columns={buildColumns(now, compact)}
      rowKey={(b) => b.id}
      rowProps={(b) => ({ 'data-testid': `build-${b.id}`, 'data-status': b.status })}
    />
  );
}
