// An application's (or resource's) health and sync status as badges with a symbol, so colour
// is never the only sign.
import { healthBadge, phaseTone, syncBadge } from '../lib/apps';
import { Badge, LookBadge } from './Badge';

export function HealthBadge({ status, message }: { status?: string; message?: string }) {
  return <LookBadge look={healthBadge(status)} title={message || undefined} />;
}

export function SyncBadge({ status }: { status?: string }) {
  return <LookBadge look={syncBadge(status)} />;
}

export function PhaseBadge({ phase, title }: { phase?: string; title?: string }) {
  return (
    <Badge tone={phaseTone(phase)} title={title}>
      {phase || 'unknown'}
    </Badge>
  );
}
