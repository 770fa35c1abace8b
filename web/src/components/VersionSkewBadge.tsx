import type { VersionSkew } from '../api/types';
import { Badge } from './Badge';

/** A runtime's or runner's version with, when it lags the control plane, a badge: "outdated"
 * (one minor version behind: works, upgrade it) or "unsupported" (refused), naming both
 * versions; the policy's advice is in the title. Current and development builds show the
 * version alone. */
export function VersionWithSkew({ version, skew }: { version?: string; skew?: VersionSkew }) {
  const shown = version || skew?.agent;
  if (!skew || (skew.status !== 'outdated' && skew.status !== 'unsupported')) {
    return <>{shown || '—'}</>;
  }
  const tone = skew.status === 'outdated' ? 'warning' : 'danger';
  const icon = skew.status === 'outdated' ? '▲' : '✕';
  return (
    <span className="chips" data-testid="version-skew">
      <span>{shown}</span>
      <Badge tone={tone} title={skew.message}>
        <span aria-hidden="true">{icon}</span> {skew.status} · control plane {skew.server}
      </Badge>
    </span>
  );
}
