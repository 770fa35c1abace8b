import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Runtime } from '../api/types';
import { TokenRefusalBadge, TokenRefusalBanner, tokenExpiry } from './TokenRefusal';

const base: Runtime = { id: 'rt_1', name: 'edge', type: 'hybrid', accessMode: 'tunnel', status: 'disconnected', createdAt: '2026-11-01T00:00:00Z' };
const expired = 'runtime token of edge expired at 2026-11-27T10:00:00Z: rotate it with `freshet runtime rotate-token edge`';

describe('TokenRefusal', () => {
  it('shows nothing for a runtime whose token was not refused', () => {
    expect(renderToStaticMarkup(<TokenRefusalBanner r={base} />)).toBe('');
    expect(renderToStaticMarkup(<TokenRefusalBadge r={base} />)).toBe('');
    expect(tokenExpiry(base)).toBe('never');
  });

  it('warns that an expired token must be rotated, with what the runtime was told and from where', () => {
    const r: Runtime = { ...base, tokenExpiresAt: '2026-11-27T10:00:00Z', tokenRefusal: { at: '2026-11-27T11:00:00Z', kind: 'expired', reason: expired, remote: '10.0.0.7' } };
    const html = renderToStaticMarkup(<TokenRefusalBanner r={r} />);
    expect(html).toContain('role="alert"');
    expect(html).toContain('token expired — rotate');
    expect(html).toContain('freshet runtime rotate-token edge');
    expect(html).toContain('from 10.0.0.7');
    const badge = renderToStaticMarkup(<TokenRefusalBadge r={r} />);
    expect(badge).toContain('badge-danger');
    expect(badge).toContain('token expired — rotate');
    expect(badge).toContain('title="runtime token of edge expired at 2026-11-27T10:00:00Z');
    expect(tokenExpiry(r)).not.toBe('never');
  });

  it('tells a replaced token apart from an expired one', () => {
    const r: Runtime = { ...base, tokenRefusal: { at: '2026-11-27T11:00:00Z', kind: 'replaced', reason: 'runtime token of edge was replaced at 2026-11-27T09:00:00Z by rotate-token' } };
    const html = renderToStaticMarkup(<TokenRefusalBanner r={r} />);
    expect(html).toContain('token replaced — update the runtime');
    expect(html).toContain('was replaced at');
    expect(html).not.toContain('from ');
  });
});
