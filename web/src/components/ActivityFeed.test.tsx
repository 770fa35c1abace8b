import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { AuditEvent } from '../api/types';
import { ActivityFeed } from './ActivityFeed';

const T0 = Date.now();
const ev = (id: string, minutesAgo: number, actor: string, action: string, resourceId: string): AuditEvent => ({
  id,
  time: new Date(T0 - minutesAgo * 60_000).toISOString(),
  actor,
  action,
  resourceType: 'build',
  resourceId,
  result: 'success',
});

const EVENTS = [ev('a', 1, 'system', 'build.run', 'b1'), ev('b', 2, 'ada@acme.test', 'pipeline.update', 'p1'), ev('c', 3, 'system', 'build.run', 'b2'), ev('d', 4, 'system', 'build.run', 'b3')];

describe('ActivityFeed', () => {
  it('shows the machine events as one closed "×N" row beside the person\'s own row', () => {
    const html = renderToStaticMarkup(<ActivityFeed events={EVENTS} />);
    expect(html.match(/data-testid="activity-group"/g)).toHaveLength(1);
    expect(html).toMatch(/data-testid="activity-group" data-count="3"/);
    expect(html.match(/data-testid="activity-row"/g)).toHaveLength(1);
    expect(html).toContain('aria-expanded="false"');
    expect(html).toContain('×3');
    expect(html).toContain('3 builds');
    expect(html).not.toContain('activity-member');
    // Newest first: the group (1 minute ago) before the person's action.
    expect(html.indexOf('activity-group')).toBeLessThan(html.indexOf('activity-row'));
  });

  it('lists each event of an open group under it', () => {
    const html = renderToStaticMarkup(<ActivityFeed events={EVENTS} initiallyOpen={['a']} />);
    expect(html).toContain('aria-expanded="true"');
    expect(html.match(/class="activity-member"/g)).toHaveLength(3);
    for (const id of ['b1', 'b2', 'b3']) expect(html).toContain(`build ${id}`);
  });

  it('counts rows after grouping', () => {
    const many = Array.from({ length: 20 }, (_, i) => ev(`p${i}`, i, `u${i}@acme.test`, 'user.update', `u${i}`));
    expect(renderToStaticMarkup(<ActivityFeed events={many} rows={5} />).match(/data-testid="activity-row"/g)).toHaveLength(5);
  });
});
