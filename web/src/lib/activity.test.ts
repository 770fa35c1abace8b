import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../api/types';
import { groupActivity, isMachineActor } from './activity';

let n = 0;
const T0 = Date.parse('2026-11-27T12:00:00Z');
function ev(minutesAgo: number, actor: string, action: string, result: AuditEvent['result'] = 'success'): AuditEvent {
  return { id: `e${++n}`, time: new Date(T0 - minutesAgo * 60_000).toISOString(), actor, action, resourceType: 'build', result };
}
const shape = (rows: ReturnType<typeof groupActivity>) => rows.map((r) => `${r.events[0].actor}:${r.events[0].action}×${r.events.length}`);

describe('isMachineActor', () => {
  it('is the platform and API keys, never a person', () => {
    expect(isMachineActor('system')).toBe(true);
    expect(isMachineActor('ci@acme.test (api key deploy-bot)')).toBe(true);
    expect(isMachineActor('ada@acme.test')).toBe(false);
    expect(isMachineActor("ada@acme.test (via runtime edge's ingress)")).toBe(false);
    expect(isMachineActor('anonymous')).toBe(false);
  });
});

describe('groupActivity', () => {
  it('folds repeated machine events into one row and keeps every person\'s action its own row, in time order', () => {
    const events = [
      ev(1, 'system', 'build.run'),
      ev(2, 'system', 'build.run'),
      ev(3, 'ada@acme.test', 'user.update'),
      ev(4, 'system', 'runtime.disconnected'),
      ev(5, 'system', 'build.run'),
      ev(6, 'ada@acme.test', 'user.update'),
      ev(7, 'ci@acme.test (api key bot)', 'build.run'),
      ev(8, 'ci@acme.test (api key bot)', 'build.run'),
    ];
    const rows = groupActivity(events.slice().reverse()); // any input order
    expect(shape(rows)).toEqual(['system:build.run×3', 'ada@acme.test:user.update×1', 'system:runtime.disconnected×1', 'ada@acme.test:user.update×1', 'ci@acme.test (api key bot):build.run×2']);
    // The group's events are newest first, the row keyed by the newest.
    expect(rows[0].events.map((e) => e.id)).toEqual([events[0].id, events[1].id, events[4].id]);
    expect(rows[0].key).toBe(events[0].id);
  });

  it('starts a new group past the window, and never joins different results or actors', () => {
    const rows = groupActivity([ev(0, 'system', 'build.run'), ev(20, 'system', 'build.run'), ev(45, 'system', 'build.run'), ev(46, 'system', 'build.run', 'failure'), ev(47, 'other@x (api key k)', 'build.run')], 30 * 60_000);
    expect(shape(rows)).toEqual(['system:build.run×2', 'system:build.run×1', 'system:build.run×1', 'other@x (api key k):build.run×1']);
    expect(rows[2].events[0].result).toBe('failure');
  });

  it('gives nothing for nothing', () => {
    expect(groupActivity([])).toEqual([]);
  });
});
