import type { ReactNode } from 'react';
import { wordTone, type BadgeLook, type Tone } from '../lib/tone';

export function Badge({ tone = 'neutral', children, title }: { tone?: Tone; children: ReactNode; title?: string }) {
  return (
    <span className={`badge badge-${tone}`} title={title}>
      {children}
    </span>
  );
}

/** A badge for a status word the API returns (success, denied, active, revoked, admin, …). */
export function StatusBadge({ value }: { value: string }) {
  return <Badge tone={wordTone(value)}>{value}</Badge>;
}

/** A status with its symbol (lib/apps.ts, lib/runtimes.ts say which). */
export function LookBadge({ look, title }: { look: BadgeLook; title?: string }) {
  return (
    <Badge tone={look.tone} title={title}>
      <span aria-hidden="true">{look.icon}</span> {look.label}
    </Badge>
  );
}
