import { describe, expect, it } from 'vitest';
import { emptyExplainForm, emptyRuleForm, explainErrors, explainQuery, ruleAttributes, ruleErrors, ruleRequest, splitList, ssoErrors, ssoFormFrom, ssoRequest } from './governance';

describe('single sign-on form', () => {
  const filled = { ...ssoFormFrom(), issuer: 'https://idp.example', clientId: 'freshet', allowedDomains: 'example.com' };

  it('asks for the secret only when none is stored, and never sends an empty one', () => {
    expect(ssoErrors(filled, false).clientSecret).toMatch(/client secret/);
    expect(ssoErrors(filled, true)).toEqual({});
    expect(ssoRequest(filled)).toEqual({ issuer: 'https://idp.example', clientId: 'freshet', allowedDomains: ['example.com'] });
    expect(ssoErrors({ ...filled, allowedDomains: ' ' }, true).allowedDomains).toMatch(/email domains/);
    expect(ssoRequest({ ...filled, clientSecret: 's3cret' }).clientSecret).toBe('s3cret');
  });

  it('names the bad field: issuer, domain, break-glass admin', () => {
    expect(ssoErrors({ ...filled, issuer: 'idp.example' }, true).issuer).toBe('"idp.example" is not an http(s) URL.');
    expect(ssoErrors({ ...filled, allowedDomains: 'example.com, not a domain!' }, true).allowedDomains).toBe('"not" is not a domain name (like example.com).');
    expect(ssoErrors({ ...filled, requireSso: true }, true).breakGlass).toMatch(/break-glass admin/);
    expect(ssoErrors({ ...filled, requireSso: true, breakGlass: 'ops@' }, true).breakGlass).toMatch(/not a valid email/);
  });

  it('sends require-SSO with its break-glass admin, and lists split on commas and spaces', () => {
    const req = ssoRequest({ ...filled, requireSso: true, breakGlass: ' ops@example.com ', scopes: 'openid  email groups', allowedDomains: 'a.example,b.example' });
    expect(req).toMatchObject({ requireSso: true, breakGlass: 'ops@example.com', scopes: ['openid', 'email', 'groups'], allowedDomains: ['a.example', 'b.example'] });
    expect(ssoRequest({ ...filled, breakGlass: 'ops@example.com' }).breakGlass).toBeUndefined();
  });

  it('fills the form from the stored configuration without the secret', () => {
    const f = ssoFormFrom({
      issuer: 'https://idp.example',
      clientId: 'c',
      clientSecretSet: true,
      scopes: ['openid', 'email'],
      emailClaim: 'email',
      nameClaim: '',
      groupsClaim: 'roles',
      allowedDomains: ['example.com'],
      requireSso: true,
      breakGlass: 'ops@example.com',
      loginUrl: 'http://x/auth/sso/a/login',
      updatedAt: '2026-01-01T00:00:00Z',
    });
    expect(f).toMatchObject({ clientSecret: '', scopes: 'openid email', allowedDomains: 'example.com', requireSso: true, breakGlass: 'ops@example.com', groupsClaim: 'roles' });
  });
});

describe('rule form', () => {
  it('needs a subject, and attributes the kind has', () => {
    expect(ruleErrors(emptyRuleForm).team).toMatch(/Choose the team/);
    expect(ruleErrors({ ...emptyRuleForm, subject: 'user' }).user).toMatch(/email/);
    expect(ruleErrors({ ...emptyRuleForm, team: 'qa', kind: 'runtimes', tags: 'prod' }).tags).toBe('Only projects, pipelines, builds have tags; runtimes do not.');
    expect(ruleErrors({ ...emptyRuleForm, team: 'qa', kind: 'projects', namespace: 'x' }).runtime).toMatch(/describe runtimes/);
    expect(ruleErrors({ ...emptyRuleForm, team: 'qa', kind: 'applications', namespace: 'x' })).toEqual({});
  });

  it('sends only what was given', () => {
    expect(ruleRequest({ ...emptyRuleForm, team: 'qa', action: 'run', kind: 'pipelines', tags: 'prod, eu', owner: 'own-team' })).toEqual({
      team: 'qa',
      action: 'run',
      kind: 'pipelines',
      tags: ['prod', 'eu'],
      owner: 'own-team',
    });
    expect(ruleRequest({ ...emptyRuleForm, subject: 'user', team: 'qa', user: ' jo@example.com ' })).toEqual({ user: 'jo@example.com', action: 'read', kind: 'projects' });
  });

  it('lists a derived rule’s attributes, its project and globs too', () => {
    const attrs = ruleAttributes({
      id: 'r',
      team: 'qa',
      action: 'sync',
      kind: 'applications',
      runtime: 'edge',
      project: 'shop',
      apps: ['web-*'],
      exceptApps: ['web-2'],
      origin: 'AppProject shop of runtime edge, role deployer',
      summary: '',
      createdAt: '',
    });
    expect(attrs).toEqual([
      { label: 'runtime', value: 'edge' },
      { label: 'project', value: 'shop' },
      { label: 'apps', value: 'web-*' },
      { label: 'except', value: 'web-2' },
    ]);
  });
});

describe('explain form', () => {
  it('needs a name and builds KIND/NAME', () => {
    expect(explainErrors(emptyExplainForm).name).toBe('Give the name of the project to explain.');
    expect(explainQuery({ ...emptyExplainForm, kind: 'applications', name: ' web ', tags: 'a b', runtime: 'edge' })).toEqual({
      user: undefined,
      action: 'read',
      resource: 'applications/web',
      runtime: 'edge',
      cluster: undefined,
      namespace: undefined,
      tags: 'a,b',
    });
  });

  it('splits lists', () => {
    expect(splitList(' a, b\nc ,, ')).toEqual(['a', 'b', 'c']);
  });
});
