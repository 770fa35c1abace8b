import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { Deployment } from '../api/analytics';
import { DeploymentTimeline } from './DeploymentTimeline';

const sha = 'c0ffee'.padEnd(40, '1');
const digest = 'sha256:' + 'ab'.repeat(32);

const ok: Deployment = {
  id: 'dep_2',
  runtime: 'edge',
  runtimeId: 'rt_1',
  application: 'web',
  cluster: 'prod',
  namespace: 'shop',
  revision: sha,
  syncId: 2,
  trigger: 'auto-sync',
  initiatedBy: 'automated',
  result: 'succeeded',
  commit: { author: 'Ada', message: 'SHOP-12 add the cart\n\nlong body', time: '2026-11-26T09:00:00Z' },
  images: [
    {
      registry: 'ghcr.io',
      repository: 'ghcr.io/acme/web',
      tags: ['1.4.0'],
      digest,
      buildId: 'bld_1',
      commits: [{ sha, message: 'SHOP-12 add the cart', author: 'Ada', branch: 'feature/SHOP-12' }],
      issues: [
        { key: 'SHOP-12', title: 'Add a cart', state: 'Done', url: 'https://jira.example/browse/SHOP-12', tracker: 'jira' },
        { key: '#7', error: 'no issue tracker is configured for it' },
      ],
    },
  ],
  commits: [
    { sha, message: 'SHOP-12 add the cart', author: 'Ada', time: '2026-11-26T09:00:00Z', issues: ['SHOP-12'], sources: ['git', 'image'] },
  ],
  commitRange: { kind: 'range', from: 'c0ffee'.padEnd(40, '0') },
  finishedAt: '2026-11-26T10:00:00Z',
  durationSeconds: 42,
  leadTimeSeconds: 3600,
};

const failed: Deployment = {
  ...ok,
  id: 'dep_1',
  revision: 'v1.3.0',
  trigger: 'manual',
  user: 'ops@example.com',
  result: 'failed',
  message: 'one or more objects failed to apply',
  images: null,
  commit: undefined,
  leadTimeSeconds: undefined,
  degradedAt: '2026-11-25T10:05:00Z',
};

describe('the deployment timeline', () => {
  it("shows each deployment's revision, trigger, result, images with digests, and the commits and issues they shipped", () => {
    const html = renderToStaticMarkup(<DeploymentTimeline items={[ok, failed]} />);
    expect(html.indexOf('deployment-dep_2')).toBeLessThan(html.indexOf('deployment-dep_1'));
    expect(html).toContain(`<code title="${sha}">c0ffee1</code>`);
    expect(html).toContain('Auto-sync');
    expect(html).toContain('>ghcr.io/acme/web:1.4.0@abababababab<');
    expect(html).not.toContain('ghcr.io/ghcr.io');
    expect(html).toContain(`title="${digest}"`);
    expect(html).toContain('href="/builds/bld_1"');
    expect(html).toContain('SHOP-12 add the cart');
    expect(html).toContain('on feature/SHOP-12');
    expect(html).toContain('href="https://jira.example/browse/SHOP-12"');
    expect(html).toContain(' Add a cart');
    expect(html).toContain('(no issue tracker is configured for it)');
    expect(html).toContain('lead time 1h');
    expect(html).toContain('took 42s');
    // The commit's first line only.
    expect(html).not.toContain('long body');
  });

  it('marks a failed deployment, who started it, why it failed and what followed, and one without images', () => {
    const html = renderToStaticMarkup(<DeploymentTimeline items={[failed]} showApp={false} />);
    expect(html).toContain('data-result="failed"');
    expect(html).toContain('Manual sync by ops@example.com');
    expect(html).toContain('one or more objects failed to apply');
    expect(html).toMatch(/Failed change: degraded /);
    expect(html).toContain('No images recorded');
    expect(html).toContain('<code title="v1.3.0">v1.3.0</code>');
    // Without the application's name when the page is the application's.
    expect(html).not.toContain('href="/applications/edge/web"');
  });

  it("shows the commits the runtime found in the deployment's git range: SHA, subject, author and issue keys, with the range's kind", () => {
    const older = 'beef'.padEnd(40, '2');
    const d: Deployment = {
      ...ok,
      images: null,
      commits: [
        { sha, message: 'SHOP-12 add the cart\nbody', author: 'Ada', issues: ['SHOP-12'], sources: ['git', 'image'] },
        { sha: older, message: 'fix the basket (SHOP-9, OPS-3)', author: 'Grace', issues: ['SHOP-9', 'OPS-3'], sources: ['git'] },
        { sha: 'abc1234', message: 'image only', issues: null, sources: ['image'] },
      ],
      commitRange: { kind: 'range', from: 'c0ffee'.padEnd(40, '0'), truncated: true },
    };
    const html = renderToStaticMarkup(<DeploymentTimeline items={[d]} />);
    expect(html).toContain('data-range="range"');
    // Two of the three came from the git walk; the third from an image's build.
    expect(html).toContain('2 commits since c0ffee0 (the newest; there were more)');
    expect(html).toContain(`<code title="${older}">beef222</code> fix the basket (SHOP-9, OPS-3)<span class="muted"> — Grace</span>`);
    expect(html).toContain('data-testid="commit-issue-SHOP-9"');
    expect(html).toContain('data-testid="commit-issue-OPS-3"');
    expect(html).toContain('data-testid="commit-issue-SHOP-12"');
    expect(html).toContain('image only<span class="muted small"> (from an image)</span>');
    expect(html).not.toContain('body');
  });

  it.each([
    [{ kind: 'first' }, [{ sha, message: 'initial', author: 'Ada', issues: null, sources: ['git'] }], 'First deployment of the repository'],
    [{ kind: 'rollback', from: 'c0ffee'.padEnd(40, '0') }, null, 'Rollback to an earlier revision (from c0ffee0): no new commits'],
    [{ kind: 'unchanged' }, [], 'Same revision as the previous deployment: no new commits'],
    [{ kind: 'range' }, [{ sha, message: 'one', issues: null, sources: ['git'] }], '1 commit<'],
  ])('words the %o range', (commitRange, commits, words) => {
    const html = renderToStaticMarkup(<DeploymentTimeline items={[{ ...ok, images: null, commitRange, commits }]} />);
    expect(html).toContain(`data-range="${commitRange.kind}"`);
    expect(html).toContain(words);
  });

  it('shows no commits section for a runtime that reports no range and an image without commits', () => {
    const html = renderToStaticMarkup(<DeploymentTimeline items={[{ ...ok, images: null, commits: null, commitRange: undefined }]} />);
    expect(html).not.toContain('deployment-commits');
  });

  it('links to the application when listing several', () => {
    expect(renderToStaticMarkup(<DeploymentTimeline items={[ok]} />)).toContain('href="/applications/edge/web"');
  });
});
