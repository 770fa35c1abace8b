import { describe, expect, it } from 'vitest';
import { queueWait } from './queueWait';

const b = { id: 'b2', createdAt: '2026-01-01T00:00:02Z', branch: 'main' };
const queued = [
  { id: 'b3', createdAt: '2026-01-01T00:00:03Z' },
  b,
  { id: 'b1', createdAt: '2026-01-01T00:00:01Z' },
];

describe('queueWait', () => {
  it('gives the place in the queue, oldest first', () => {
    const w = queueWait(b, { queued, runners: [{ name: 'r1', connected: true }], running: [] });
    expect(w.position).toBe(2);
    expect(w.of).toBe(3);
    expect(w.reasons).toEqual(['1 build queued before it are offered first.']);
  });

  it('says when no runner has the labels, naming those that have them but are away', () => {
    const pipeline = { config: { runnerLabels: { arch: 'arm64' } } };
    const w = queueWait(b, {
      queued: [b],
      pipeline,
      running: [],
      runners: [
        { name: 'amd', connected: true, labels: { arch: 'amd64' } },
        { name: 'pi', connected: false, labels: { arch: 'arm64', disk: 'ssd' } },
      ],
    });
    expect(w.reasons).toEqual(['No connected runner has the labels arch=arm64 (pi has them but is not connected).']);
    expect(queueWait(b, { queued: [b], pipeline, running: [], runners: [] }).reasons[0]).toMatch(/No runner is registered/);
    expect(queueWait(b, { queued: [b], pipeline, running: [], runners: [{ name: 'x', connected: false }] }).reasons[0]).toBe('None of the 1 registered runners is connected.');
  });

  it('says when the pipeline or branch concurrency limit is reached', () => {
    const w = queueWait(b, {
      queued: [b],
      runners: [{ name: 'r', connected: true }],
      pipeline: { config: { concurrency: 2, branchConcurrency: 1 } },
      running: [{ branch: 'main' }, { branch: 'dev' }],
    });
    expect(w.reasons).toEqual(["The pipeline's concurrency limit is reached: 2 of 2 running.", 'The limit per branch is reached on main: 1 of 1 running.']);
  });
});
