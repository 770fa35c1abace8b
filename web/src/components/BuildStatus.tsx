import { elapsed, formatDuration, statusIcon, statusLabel, statusTone } from '../lib/builds';
import { Badge } from './Badge';

/** A build's or step's status as a badge with its symbol. */
export function BuildStatusBadge({ status, title }: { status: string; title?: string }) {
  return (
    <Badge tone={statusTone(status)} title={title}>
      <span className={status === 'running' ? 'status-icon status-running' : 'status-icon'} aria-hidden="true">
        {statusIcon(status)}
      </span>{' '}
      {statusLabel(status)}
    </Badge>
  );
}

/** How long something ran, or has been running. */
export function Duration({ start, end, now }: { start?: string; end?: string; now?: number }) {
  const ms = elapsed(start, end, now);
  return <span className="tabular">{formatDuration(ms)}</span>;
}
