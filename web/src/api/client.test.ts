import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError, buildQuery, errorFromResponse, fieldError, readCookie, request, setFetch, setUnauthenticatedHandler } from './client';
import { gql } from './graphql';
import { appProxy } from './apps';
import { runtimeProxy } from './gitops';
import { audit, invitations, users } from './rest';

type Call = { url: string; init: RequestInit };
let calls: Call[];

function respond(status: number, body?: unknown, headers: Record<string, string> = {}) {
  setFetch(async (url, init) => {
    calls.push({ url, init: init ?? {} });
    const text = body === undefined ? '' : typeof body === 'string' ? body : JSON.stringify(body);
    return new Response(status === 204 ? null : text, { status, headers: { 'Content-Type': 'application/json', ...headers } });
  });
}

beforeEach(() => {
  calls = [];
  vi.stubGlobal('document', { cookie: 'theme=x; freshet_csrf=abc%3D123; other=1' });
});
afterEach(() => {
  vi.unstubAllGlobals();
  setUnauthenticatedHandler(undefined);
});

describe('request', () => {
  it('sends the CSRF header from the cookie on requests that change state, not on reads', async () => {
    respond(200, { items: [] });
    await request('/api/v1/users');
    expect((calls[0].init.headers as Record<string, string>)['X-CSRF-Token']).toBeUndefined();
    respond(201, { id: 'usr_1' });
    await users.create({ email: 'a@example.com', role: 'viewer' });
    const h = calls[1].init.headers as Record<string, string>;
    expect(h['X-CSRF-Token']).toBe('abc=123');
    expect(h['Content-Type']).toBe('application/json');
    expect(calls[1].init.method).toBe('POST');
    expect(calls[1].init.credentials).toBe('same-origin');
    expect(JSON.parse(calls[1].init.body as string)).toEqual({ email: 'a@example.com', role: 'viewer' });
  });

  it('turns the error body into an ApiError with code, message, field and request id', async () => {
    respond(400, { error: { code: 'invalid_argument', message: 'email: "x" is not a valid email address', field: 'email', requestId: 'r1' } });
    const err = (await request('/api/v1/users', { method: 'POST', body: {} }).catch((e) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'invalid_argument', status: 400, field: 'email', requestId: 'r1' });
    expect(err.message).toContain('not a valid email');
    expect(fieldError(err, 'email')).toContain('not a valid email');
    expect(fieldError(err, 'role')).toBeUndefined();
  });

  it('describes bodies that are not the error shape by their status', async () => {
    respond(502, '<html>bad gateway</html>', { 'X-Request-Id': 'r2' });
    const err = (await request('/x').catch((e) => e)) as ApiError;
    expect(err.code).toBe('unavailable');
    expect(err.message).toBe('502 error');
    expect(err.requestId).toBe('r2');
    respond(500, 'plain words');
    expect(((await request('/x').catch((e) => e)) as ApiError).message).toBe('500 error: plain words');
    expect((await errorFromResponse(new Response('{"error":{}}', { status: 409 }))).code).toBe('conflict');
  });

  it('reports a 401 to the app unless the call is quiet', async () => {
    const seen: ApiError[] = [];
    setUnauthenticatedHandler((e) => seen.push(e));
    respond(401, { error: { code: 'unauthenticated', message: 'session expired' } });
    await request('/api/v1/users').catch(() => {});
    expect(seen).toHaveLength(1);
    expect(seen[0].unauthenticated).toBe(true);
    await request('/api/v1/me', { quiet401: true }).catch(() => {});
    expect(seen).toHaveLength(1);
  });

  it('says the server cannot be reached when fetch fails, and lets aborts through', async () => {
    setFetch(async () => {
      throw new TypeError('Failed to fetch');
    });
    const err = (await request('/x').catch((e) => e)) as ApiError;
    expect(err.code).toBe('network');
    expect(err.status).toBe(0);
    setFetch(async () => {
      throw new DOMException('aborted', 'AbortError');
    });
    expect(((await request('/x').catch((e) => e)) as Error).name).toBe('AbortError');
  });

  it('returns undefined for 204 and refuses a 200 that is not JSON', async () => {
    respond(204);
    expect(await users.remove('usr_1')).toBeUndefined();
    expect(calls[0].url).toBe('/api/v1/users/usr_1');
    expect(calls[0].init.method).toBe('DELETE');
    respond(200, 'not json');
    expect(((await request('/x').catch((e) => e)) as ApiError).code).toBe('bad_response');
  });

  it('builds query strings without empty values, and escapes path segments', async () => {
    expect(buildQuery({ a: 'x y', b: undefined, c: '', d: 0, e: null })).toBe('?a=x+y&d=0');
    expect(buildQuery({})).toBe('');
    respond(200, { items: [] });
    await audit.list({ action: 'user.*', result: '', since: '24h', limit: 500, after: 'c/1' });
    expect(calls[0].url).toBe('/api/v1/audit?limit=500&after=c%2F1&action=user.*&since=24h');
    respond(200, { id: 'x' });
    await users.get('a/b');
    expect(calls[1].url).toBe('/api/v1/users/a%2Fb');
  });

  it('answers invitations with a POST to the invitation, CSRF token included', async () => {
    respond(200, { id: 'acc_1', name: 'bravo', role: 'viewer' });
    expect(await invitations.accept('inv/1')).toEqual({ id: 'acc_1', name: 'bravo', role: 'viewer' });
    respond(204);
    await invitations.decline('inv_2');
    expect(calls.map((c) => [c.init.method, c.url])).toEqual([
      ['POST', '/api/v1/invitations/inv%2F1/accept'],
      ['POST', '/api/v1/invitations/inv_2/decline'],
    ]);
    expect((calls[0].init.headers as Record<string, string>)['X-CSRF-Token']).toBe('abc=123');
  });
});

describe('app-proxy calls', () => {
  it('sends an Application as the YAML typed, with its Git Source in the query', async () => {
    respond(201, { name: 'web', status: {} });
    const yaml = 'apiVersion: argoproj.io/v1alpha1\nkind: Application\n';
    await appProxy.create('edge 1', yaml, 'prod-apps');
    expect(calls[0].url).toBe('/runtimes/edge%201/app-proxy/api/v1/applications?gitSource=prod-apps');
    const h = calls[0].init.headers as Record<string, string>;
    expect(h['Content-Type']).toBe('application/yaml');
    expect(h['X-CSRF-Token']).toBe('abc=123');
    expect(calls[0].init.body).toBe(yaml);
    await appProxy.create('local', yaml);
    expect(calls[1].url).toBe('/runtimes/local/app-proxy/api/v1/applications');
  });

  it('switches auto-sync on and upserts Git Sources as JSON', async () => {
    respond(200, {});
    await appProxy.setAutoSync('local', 'shop', true);
    expect(calls[0].url).toBe('/runtimes/local/app-proxy/api/v1/applications/shop/auto-sync');
    expect(JSON.parse(calls[0].init.body as string)).toEqual({ enabled: true });
    const g = { apiVersion: 'freshet.dev/v1', kind: 'GitSource', metadata: { name: 'p' }, spec: { repoURL: 'file:///r.git' } };
    await runtimeProxy.putGitSource('local', g, true);
    expect(calls[1].url).toBe('/runtimes/local/app-proxy/api/v1/git-sources?upsert=true');
    expect((calls[1].init.headers as Record<string, string>)['Content-Type']).toBe('application/json');
    expect(JSON.parse(calls[1].init.body as string)).toEqual(g);
    await runtimeProxy.putGitSource('local', g, false);
    expect(calls[2].url).toBe('/runtimes/local/app-proxy/api/v1/git-sources');
  });
});

describe('readCookie', () => {
  it('finds a cookie among others and decodes it', () => {
    expect(readCookie('freshet_csrf', 'a=1; freshet_csrf=t%20k; b=2')).toBe('t k');
    expect(readCookie('freshet_csrf', 'xfreshet_csrf=1')).toBeUndefined();
    expect(readCookie('x', '')).toBeUndefined();
  });
});

describe('gql', () => {
  it('posts the query with CSRF and returns data', async () => {
    respond(200, { data: { me: { role: 'admin' } } });
    expect(await gql<{ me: { role: string } }>('{ me { role } }', { a: 1 })).toEqual({ me: { role: 'admin' } });
    expect(calls[0].url).toBe('/api/graphql');
    expect((calls[0].init.headers as Record<string, string>)['X-CSRF-Token']).toBe('abc=123');
    expect(JSON.parse(calls[0].init.body as string)).toEqual({ query: '{ me { role } }', variables: { a: 1 } });
  });

  it('turns GraphQL errors into ApiErrors with code and field', async () => {
    respond(200, { data: null, errors: [{ message: 'first: must be from 1 to 1000', extensions: { code: 'invalid_argument', field: 'first' } }] });
    const err = (await gql('{ users(first: 0) { nodes { id } } }').catch((e) => e)) as ApiError;
    expect(err).toMatchObject({ code: 'invalid_argument', field: 'first', message: 'first: must be from 1 to 1000' });
    respond(401, { errors: [{ message: 'unauthenticated' }] });
    expect(((await gql('{ me { role } }').catch((e) => e)) as ApiError).status).toBe(401);
  });
});

describe('runtimeProxy.repositories', () => {
  it('sends the provider token only as X-Git-Token, and the rest as the query', async () => {
    respond(200, { items: [{ name: 'gitops', fullName: 'ops/gitops', cloneUrl: 'https://gitea.example.com/ops/gitops.git' }] });
    const res = await runtimeProxy.repositories('local', { provider: 'gitea', baseURL: 'http://127.0.0.1:3000', owner: 'ops' }, 's3cret');
    expect(res.items[0].fullName).toBe('ops/gitops');
    expect(calls[0].url).toBe('/runtimes/local/app-proxy/api/v1/git/repositories?provider=gitea&baseURL=http%3A%2F%2F127.0.0.1%3A3000&owner=ops');
    const h = calls[0].init.headers as Record<string, string>;
    expect(h['X-Git-Token']).toBe('s3cret');
    expect(h.Accept).toBe('application/json');
    expect(calls[0].url).not.toContain('s3cret');
  });

  it('answers the runtime refusal as an ApiError with its message', async () => {
    respond(403, { error: { code: 'permission_denied', message: 'gitea refused the token (): check it and its expiry' } });
    await expect(runtimeProxy.repositories('local', { provider: 'gitea', baseURL: 'http://x' }, 'bad')).rejects.toMatchObject({ status: 403, message: expect.stringContaining('refused the token') });
  });
});
