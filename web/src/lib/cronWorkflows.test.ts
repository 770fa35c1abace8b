import { expect, test } from 'vitest';
import type { ArchivedWorkflow, Workflow } from '../api/workflows';
import { cronOpOf, cronRunsOf, cronState, scheduleText } from './cronWorkflows';

const wf = (name: string, cronWorkflow: string, startedAt: string, namespace = 'ci'): Workflow => ({
  name, namespace, uid: name, phase: 'Running', message: '', startedAt, finishedAt: null, progress: '', template: '', suspended: false,
  shutdown: '', creator: '', resubmittedFrom: '', sensor: '', cronWorkflow, createdAt: startedAt,
});
const arch = (name: string, trigger: string, triggeredBy: string, startedAt: string, runtime = 'hy'): ArchivedWorkflow => ({
  id: `wfa_${name}`, runtime, runtimeId: 'r', namespace: 'ci', name, uid: name, phase: 'Failed', message: 'boom', template: '', trigger,
  triggeredBy, progress: '', nodeCount: 1, startedAt, finishedAt: startedAt, durationSeconds: 1, archivedAt: startedAt,
});

test('runs: its live Workflows and its archived cron runs, newest first, each once', () => {
  const live = [wf('nightly-100', 'nightly', '2026-01-02T03:00:00Z'), wf('other-1', 'other', '2026-01-05T00:00:00Z'), wf('nightly-7', 'nightly', '2026-01-09T00:00:00Z', 'prod')];
  const archived = [
    arch('nightly-100', 'cron', 'nightly', '2026-01-02T03:00:00Z'),
    arch('nightly-50', 'cron', 'nightly', '2026-01-01T03:00:00Z'),
    arch('nightly-x', 'sensor', 'nightly', '2026-01-03T03:00:00Z'), // a Sensor of that name is another thing
    arch('nightly-y', 'cron', 'nightly', '2026-01-04T03:00:00Z', 'elsewhere'),
  ];
  const runs = cronRunsOf({ name: 'nightly', namespace: 'ci' }, live, archived, 'hy');
  expect(runs.map((r) => [r.name, r.live])).toEqual([
    ['nightly-100', true],
    ['nightly-50', false],
  ]);
  expect(runs[1]).toMatchObject({ archiveId: 'wfa_nightly-50', phase: 'Failed', message: 'boom' });
});

test('state and operation: stopped for good, suspended, invalid, active', () => {
  const base = { phase: 'Active', suspended: false, conditions: null };
  expect([cronState(base), cronOpOf(base)]).toEqual(['Active', 'suspend']);
  expect([cronState({ ...base, suspended: true }), cronOpOf({ ...base, suspended: true })]).toEqual(['Suspended', 'resume']);
  expect([cronState({ ...base, phase: 'Stopped', suspended: true }), cronOpOf({ ...base, phase: 'Stopped', suspended: true })]).toEqual(['Stopped', undefined]);
  expect(cronState({ ...base, conditions: [{ type: 'SpecError', status: 'True', message: 'spec.when: …' }] })).toBe('Invalid');
  expect(scheduleText({ schedules: ['0 3 * * *', '0 15 * * *'] })).toBe('0 3 * * *, 0 15 * * *');
  expect(scheduleText({ schedules: null })).toBe('');
});
