import type { ReactNode } from 'react';

export type Tone = 'neutral' | 'success' | 'warning' | 'danger' | 'info';

export function Badge({ tone = 'neutral', children, title }: { tone?: Tone; children: ReactNode; title?: string }) {
  return (
    <span className={`badge badge-${tone}`} title={title}>
      {children}
    </span>
  );
}

const toneOf: Record<string, Tone> = {
  success: 'success',
  active: 'success',
  denied: 'warning',
  expired: 'neutral',
  revoked: 'neutral',
  failure: 'danger',
  admin: 'info',
};

/** A badge for a status word the API returns (success, denied, active, revoked, admin, …). */
export function StatusBadge({ value }: { value: string }) {
  return <Badge tone={toneOf[value] ?? 'neutral'}>{value}</Badge>;
}
