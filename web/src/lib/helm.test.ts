import { describe, expect, it } from 'vitest';
import type { HelmRelease } from '../api/analytics';
import { groupReleases, helmStatusTone } from './helm';

const release = (runtime: string, cluster: string, namespace: string, name: string, over: Partial<HelmRelease> = {}): HelmRelease => ({
  id: `hr_${runtime}_${cluster}_${namespace}_${name}`,
  runtime,
  runtimeId: `rt_${runtime}`,
  cluster,
  namespace,
  name,
  chart: 'nginx',
  chartVersion: '1.2.3',
  appVersion: '1.25.0',
  status: 'deployed',
  revision: 3,
  updated: '2026-11-26T10:00:00Z',
  description: 'Upgrade complete',
  reportedAt: '2026-11-26T10:00:05Z',
  ...over,
});

describe('Helm releases', () => {
  it('groups by cluster (and runtime), then namespace, names sorted', () => {
    const g = groupReleases([
      release('edge', 'prod', 'web', 'b'),
      release('edge', 'dev', 'web', 'x'),
      release('edge', 'prod', 'api', 'z'),
      release('edge', 'prod', 'web', 'a'),
      release('other', 'prod', 'web', 'c'),
    ]);
    expect(g.map((c) => `${c.runtime}/${c.cluster}`)).toEqual(['edge/dev', 'edge/prod', 'other/prod']);
    expect(g[1].namespaces.map((n) => [n.namespace, n.releases.map((r) => r.name)])).toEqual([
      ['api', ['z']],
      ['web', ['a', 'b']],
    ]);
    expect(groupReleases([])).toEqual([]);
  });

  it('colours statuses', () => {
    expect(helmStatusTone('deployed')).toBe('success');
    expect(helmStatusTone('failed')).toBe('danger');
    expect(helmStatusTone('pending-upgrade')).toBe('warning');
    expect(helmStatusTone('superseded')).toBe('neutral');
    expect(helmStatusTone('')).toBe('neutral');
  });
});
