import { describe, expect, it } from 'vitest';
import { countByStatus, defaultRuntime, healthTone, heartbeatLabel, reachable, unreachableNote, runtimeBadge, runtimeCommand, runtimePath, troubled } from './runtimes';
import { relativeTime } from './format';

describe('runtime status badge', () => {
  it('maps each status to a tone and icon', () => {
    expect(runtimeBadge('healthy')).toEqual({ tone: 'success', icon: '●', label: 'healthy' });
    expect(runtimeBadge('degraded').tone).toBe('warning');
    expect(runtimeBadge('disconnected').tone).toBe('danger');
    expect(runtimeBadge('installing').tone).toBe('info');
  });
  it('shows an unknown status as is, neutral', () => {
    expect(runtimeBadge('paused')).toEqual({ tone: 'neutral', icon: '?', label: 'paused' });
    expect(runtimeBadge('').label).toBe('unknown');
    expect(runtimeBadge('toString').tone).toBe('neutral');
  });
  it('maps component health', () => {
    expect(healthTone('Healthy')).toBe('success');
    expect(healthTone('degraded')).toBe('warning');
    expect(healthTone('unhealthy')).toBe('danger');
    expect(healthTone(undefined)).toBe('neutral');
  });
});

describe('relative time', () => {
  const now = Date.parse('2026-11-22T12:00:00Z');
  it('says just now for the last few seconds, then counts', () => {
    expect(relativeTime('2026-11-22T11:59:57Z', now)).toBe('just now');
    expect(relativeTime('2026-11-22T11:59:30Z', now)).toBe('30 seconds ago');
    expect(relativeTime('2026-11-22T11:59:00Z', now)).toBe('1 minute ago');
    expect(relativeTime('2026-11-22T09:00:00Z', now)).toBe('3 hours ago');
    expect(relativeTime('2026-11-20T12:00:00Z', now)).toBe('2 days ago');
    expect(relativeTime('2026-11-22T12:05:00Z', now)).toBe('in 5 minutes');
  });
  it('says never before the first heartbeat', () => {
    expect(heartbeatLabel(undefined, now)).toBe('never');
    expect(heartbeatLabel('2026-11-22T11:58:00Z', now)).toBe('2 minutes ago');
  });
});

describe('runtime counts', () => {
  const items = [
    { name: 'b', status: 'degraded' as const },
    { name: 'local', status: 'healthy' as const },
    { name: 'a', status: 'degraded' as const },
    { name: 'z', status: 'disconnected' as const },
    { name: 'new', status: 'installing' as const },
  ];
  it('counts by status with zeros', () => {
    expect(countByStatus(items)).toEqual({ healthy: 1, degraded: 2, disconnected: 1, installing: 1 });
    expect(countByStatus([])).toEqual({ healthy: 0, degraded: 0, disconnected: 0, installing: 0 });
  });
  it('lists disconnected, then degraded runtimes', () => {
    expect(troubled(items).map((r) => r.name)).toEqual(['z', 'a', 'b']);
  });
  it('writes the agent command', () => {
    expect(runtimeCommand('https://f.example', 'frt_a_b')).toBe('freshet runtime --server https://f.example --token frt_a_b');
  });
});

describe('runtime paths', () => {
  it('are one segment under /runtimes, where the UI (not the tunnel) answers', () => {
    expect(runtimePath('local')).toBe('/runtimes/local');
    expect(runtimePath('a b')).toBe('/runtimes/a%20b');
    // One segment under /runtimes/ is a UI page; deeper paths belong to the tunnel.
    expect(runtimePath('x').split('/').length).toBe(3);
  });
});

describe('reachable runtimes', () => {
  it('asks only a healthy or degraded runtime through its tunnel', () => {
    expect(['healthy', 'degraded', 'disconnected', 'installing', ''].filter((status) => reachable({ status }))).toEqual(['healthy', 'degraded']);
  });
});

describe('the runtime a form asks', () => {
  const list = [
    { name: 'edge', status: 'disconnected' },
    { name: 'prod', status: 'healthy' },
    { name: 'lab', status: 'degraded' },
  ];
  it('is the one chosen, else the first reachable, else the first', () => {
    expect(defaultRuntime(list, 'lab')?.name).toBe('lab');
    expect(defaultRuntime(list, '')?.name).toBe('prod');
    expect(defaultRuntime(list, 'gone')?.name).toBe('prod');
    expect(defaultRuntime([list[0]], '')?.name).toBe('edge');
    expect(defaultRuntime([], '')).toBeUndefined();
  });
  it('says why a disconnected one is not asked', () => {
    expect(unreachableNote(list[0])).toContain('edge is disconnected');
    expect(unreachableNote(list[1])).toBeUndefined();
    expect(unreachableNote(undefined)).toBeUndefined();
  });
});
