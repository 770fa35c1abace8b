import { describe, expect, it } from 'vitest';
import { actorText, describeActor, describeResource, emptyLookups } from './auditNames';

const l = emptyLookups();
l.users.set('usr_1', { email: 'jo@example.com', name: 'Jo Smith' });
l.apiKeys.set('key_1', 'deploy-bot');
l.runtimes.set('rt_1', 'edge');
l.pipelines.set('pl_1', 'shop/build');
l.projects.set('prj_1', 'shop');
l.runners.set('rnr_1', 'builder-1');
l.teams.set('tm_1', 'platform');

describe('describeActor', () => {
  it('names a user by name with their email, and links to Users', () => {
    const a = describeActor({ actor: 'jo@example.com', actorId: 'usr_1' }, l);
    expect(a).toMatchObject({ kind: 'user', label: 'Jo Smith', email: 'jo@example.com', href: '/users' });
    expect(actorText(a)).toBe('Jo Smith <jo@example.com>');
  });

  it('names the API key and the runtime a request came through', () => {
    const k = describeActor({ actor: 'jo@example.com (api key deploy-bot)', actorId: 'usr_1' }, l);
    expect(k).toMatchObject({ kind: 'apikey', label: 'Jo Smith', key: 'deploy-bot', href: '/users' });
    expect(actorText(k)).toBe('Jo Smith <jo@example.com> with API key deploy-bot');
    const r = describeActor({ actor: 'ana@example.com (via runtime edge\'s ingress)', actorId: 'usr_9' }, l);
    expect(r).toMatchObject({ kind: 'runtime', label: 'ana@example.com', runtime: 'edge', href: '/users' });
  });

  it('says system and anonymous plainly', () => {
    expect(describeActor({ actor: 'system' }, l)).toMatchObject({ kind: 'system', label: 'Freshet (system)' });
    expect(describeActor({ actor: 'anonymous' }, l).href).toBeUndefined();
  });
});

describe('describeResource', () => {
  it('turns IDs into names with links', () => {
    expect(describeResource({ resourceType: 'user', resourceId: 'usr_1' }, l)).toEqual({ type: 'user', name: 'jo@example.com', id: 'usr_1', href: '/users' });
    expect(describeResource({ resourceType: 'apikey', resourceId: 'key_1' }, l)).toEqual({ type: 'API key', name: 'deploy-bot', id: 'key_1', href: '/api-keys' });
    expect(describeResource({ resourceType: 'runtime', resourceId: 'rt_1' }, l)).toMatchObject({ name: 'edge', href: '/runtimes/edge' });
    expect(describeResource({ resourceType: 'pipeline', resourceId: 'pl_1' }, l)).toMatchObject({ name: 'shop/build', href: '/pipelines/shop/build' });
    expect(describeResource({ resourceType: 'project', resourceId: 'prj_1' }, l)).toMatchObject({ name: 'shop', href: '/pipelines?project=shop' });
    expect(describeResource({ resourceType: 'runner', resourceId: 'rnr_1' }, l)).toMatchObject({ name: 'builder-1', href: '/settings/runners' });
    expect(describeResource({ resourceType: 'team', resourceId: 'tm_1' }, l)).toMatchObject({ name: 'platform', href: '/settings/teams' });
    expect(describeResource({ resourceType: 'build', resourceId: 'bld_7' }, l)).toEqual({ type: 'build', name: 'bld_7', href: '/builds/bld_7' });
    expect(describeResource({ resourceType: 'context', resourceId: 'a b' }, l).href).toBe('/settings/contexts?context=a%20b');
  });

  it('keeps an ID it cannot name, without a link to a page that would not find it', () => {
    expect(describeResource({ resourceType: 'runtime', resourceId: 'rt_gone' }, l)).toEqual({ type: 'runtime', name: 'rt_gone', href: undefined });
    expect(describeResource({ resourceType: 'session' }, l)).toEqual({ type: 'session', name: '' });
  });
});
