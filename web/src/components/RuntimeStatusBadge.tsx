import { runtimeBadge } from '../lib/runtimes';
import { Badge } from './Badge';

/** A runtime's status (installing, healthy, degraded, disconnected) as a badge with its icon. */
export function RuntimeStatusBadge({ status }: { status: string }) {
  const b = runtimeBadge(status);
  return (
    <Badge tone={b.tone}>
      <span aria-hidden="true">{b.icon}</span> {b.label}
    </Badge>
  );
}
