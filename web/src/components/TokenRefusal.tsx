// A runtime whose own token the control plane refused (it expired, or rotate-token replaced it
// and the runtime still uses the old one): a banner on its page with what it was told and what
// to do, and a badge in the runtimes list. The control plane forgets the refusal once the
// runtime connects with a working token, so both go away by themselves.
import type { Runtime, RuntimeRefusal } from '../api/types';
import { formatTime } from '../lib/format';
import { Badge } from './Badge';

/** The short label of a refusal: "token expired — rotate" or "token replaced — update the runtime". */
export function refusalLabel(f: RuntimeRefusal): string {
  return f.kind === 'expired' ? 'token expired — rotate' : 'token replaced — update the runtime';
}

/** The banner above a runtime's facts while its token is refused; nothing otherwise. */
export function TokenRefusalBanner({ r }: { r: Runtime }) {
  const f = r.tokenRefusal;
  if (!f) return null;
  return (
    <div className="notice notice-error" role="alert" data-testid="runtime-token-refusal">
      <div>
        <strong>{refusalLabel(f)}</strong>
        <p>{f.reason}</p>
        <p className="muted">
          Refused {formatTime(f.at)}
          {f.remote ? ` from ${f.remote}` : ''}. This clears when the runtime connects with a working token.
        </p>
      </div>
    </div>
  );
}

/** The badge of a runtime in the list: its refusal, else nothing. */
export function TokenRefusalBadge({ r }: { r: Runtime }) {
  const f = r.tokenRefusal;
  if (!f) return null;
  return (
    <span data-testid="runtime-token-badge">
      <Badge tone="danger" title={f.reason}>
        <span aria-hidden="true">✕</span> {refusalLabel(f)}
      </Badge>
    </span>
  );
}

/** When a runtime's token stops working: "never" when it does not expire. */
export function tokenExpiry(r: Runtime): string {
  return r.tokenExpiresAt ? formatTime(r.tokenExpiresAt) : 'never';
}
