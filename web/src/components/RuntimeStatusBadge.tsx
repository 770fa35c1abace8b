import { runtimeBadge } from '../lib/runtimes';
import { LookBadge } from './Badge';

/** A runtime's status (installing, healthy, degraded, disconnected) as a badge with its icon. */
export function RuntimeStatusBadge({ status }: { status: string }) {
  return <LookBadge look={runtimeBadge(status)} />;
}
