// An application's (or resource's) health and sync status as badges with a symbol, so colour
// is never the only sign.
import { healthBadge, phaseTone, syncBadge } from '../lib/apps';
import { Badge } from './Badge';

export function HealthBadge({ status, message }: { status?: string; message?: string }) {
  const b = healthBadge(status);
  return (
    <Badge tone={b.tone} title={message || undefined}>
      <span aria-hidden="true">{b.icon}</span> {b.label}
    </Badge>
  );
}

export function SyncBadge({ status }: { status?: string }) {
  const b = syncBadge(status);
  return (
    <Badge tone={b.tone}>
      <span aria-hidden="true">{b.icon}</span> {b.label}
    </Badge>
  );
}

export function PhaseBadge({ phase, title }: { phase?: string; title?: string }) {
  return (
    <Badge tone={phaseTone(phase)} title={title}>
      {phase || 'unknown'}
    </Badge>
  );
}
