import { expect, test } from 'vitest';
import type { ArchivedWorkflow, Sensor, Workflow } from '../api/workflows';
import { pipelinesOf, runsOf } from './deliveryPipelines';

const wf = (name: string, sensor: string, startedAt: string, phase = 'Running'): Workflow => ({
  name, namespace: 'ci', uid: name, phase, message: '', startedAt, finishedAt: null, progress: '', template: 'git-clone', suspended: false,
  shutdown: '', creator: '', resubmittedFrom: '', sensor, cronWorkflow: '', createdAt: startedAt,
});
const arch = (name: string, triggeredBy: string, startedAt: string, runtime = 'hy'): ArchivedWorkflow => ({
  id: `wfa_${name}`, runtime, runtimeId: 'r', namespace: 'ci', name, uid: name, phase: 'Succeeded', message: '', template: 'git-clone', trigger: 'sensor',
  triggeredBy, progress: '', nodeCount: 1, startedAt, finishedAt: startedAt, durationSeconds: 1, archivedAt: startedAt,
});
const sensor: Sensor = {
  name: 'build', namespace: 'ci', createdAt: '', conditions: [{ type: 'Deployed', status: 'False', reason: 'EventBusNotFound', message: 'no event bus' }],
  dependencies: [{ name: 'event', eventSourceName: 'build', eventName: 'build' }],
  triggers: [{ name: 'build', type: 'argoWorkflow', kind: 'Workflow', workflowTemplate: 'git-clone' }],
};

test('runs: live and archived of the sensor, newest first, a run in both shown once', () => {
  const live = [wf('build-a', 'build', '2026-01-02T00:00:00Z'), wf('other-a', 'other', '2026-01-05T00:00:00Z')];
  const archived = [arch('build-a', 'build', '2026-01-02T00:00:00Z'), arch('build-old', 'build', '2026-01-01T00:00:00Z'), arch('build-x', 'build', '2026-01-09T00:00:00Z', 'elsewhere')];
  const runs = runsOf(sensor, live, archived, 'hy');
  expect(runs.map((r) => [r.name, r.live])).toEqual([['build-a', true], ['build-old', false]]);
  expect(runs[1].archiveId).toBe('wfa_build-old');
});

test('pipelines: trigger with the event type, template, last run, problem', () => {
  const [p] = pipelinesOf('hy', [sensor], [{ name: 'build', namespace: 'ci', createdAt: '', conditions: [], events: [{ name: 'build', type: 'github', endpoint: '/build', schedule: '' }] }], [], [arch('build-old', 'build', '2026-01-01T00:00:00Z')]);
  expect(p).toMatchObject({ name: 'build', template: 'git-clone', triggers: ['build/build (github)'], problem: 'no event bus' });
  expect(p.lastRun?.name).toBe('build-old');
});
