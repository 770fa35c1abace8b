import { describe, expect, it } from 'vitest';
import {
  applicationTemplate,
  clusterAddCommand,
  emptyGitSourceForm,
  gitSourceBody,
  gitSourceErrors,
  gitSourceFieldOf,
  gitSourceForm,
  gitSourceNameError,
  ingressHostError,
  installCommand,
  installStepOf,
  manifestIssues,
  repoBrowseErrors,
  repoQuery,
  repoURLError,
  runtimeNameError,
  shellQuote,
  type GitSourceForm,
  type RepoBrowseForm,
} from './gitops';
import { buildQuery } from '../api/client';
import { marksByLine } from './lint';

describe('runtime names, as internal/runtimes checks them', () => {
  it('takes 1–40 lowercase letters, digits and inner dashes', () => {
    for (const ok of ['a', 'edge-1', 'e2', '0', 'a'.repeat(40), 'prod-eu-1']) expect(runtimeNameError(ok), ok).toBeUndefined();
  });
  it('refuses the rest, naming the value', () => {
    expect(runtimeNameError('')).toBe('Name is required.');
    expect(runtimeNameError('Edge 1')).toContain('"Edge 1" is not a runtime name');
    for (const bad of ['Edge', 'edge_1', 'edge.1', '-edge', 'edge-', 'édge', 'a b']) expect(runtimeNameError(bad), bad).toMatch(/is not a runtime name/);
    expect(runtimeNameError('a'.repeat(41))).toContain('longer than 40 characters');
  });
  it('takes Git Source names up to 63', () => {
    expect(gitSourceNameError('prod-apps')).toBeUndefined();
    expect(gitSourceNameError('a'.repeat(63))).toBeUndefined();
    expect(gitSourceNameError('a'.repeat(64))).toContain('longer than 63');
    expect(gitSourceNameError('Prod')).toContain('not valid');
    expect(gitSourceNameError('')).toBe('Name is required.');
  });
});

describe('the wizard', () => {
  it('sends a refused field back to its step', () => {
    expect(installStepOf('name')).toBe(0);
    expect(installStepOf('accessMode')).toBe(1);
    expect(installStepOf('ingressHost')).toBe(1);
    expect(installStepOf('repo')).toBe(2);
    expect(installStepOf('body')).toBeUndefined();
    expect(installStepOf(undefined)).toBeUndefined();
  });
  it('checks the ingress host like the server: a host or an https URL', () => {
    expect(ingressHostError('edge.example.com')).toBeUndefined();
    expect(ingressHostError('https://edge.example.com:8443/')).toBeUndefined();
    expect(ingressHostError('')).toContain('required in ingress mode');
    expect(ingressHostError('https://')).toContain('is not a host name');
    expect(ingressHostError('a b')).toContain('is not a host name');
  });
  it('takes repository URLs git clones, or nothing', () => {
    for (const ok of ['', 'https://github.com/acme/rt.git', 'ssh://git@host/acme/rt.git', 'git@github.com:acme/rt.git', 'file:///tmp/rt.git']) expect(repoURLError(ok), ok).toBeUndefined();
    expect(repoURLError('github.com/acme/rt')).toContain('is not a repository URL');
    expect(repoURLError('https://a b')).toContain('is not a repository URL');
  });
});

describe('commands', () => {
  const base = { name: 'edge-1', token: 'frt_ab12_secret', server: 'https://freshet.example' };
  it('writes the install command with only the flags given', () => {
    expect(installCommand(base)).toBe('freshet runtime install edge-1 --token frt_ab12_secret --control-plane https://freshet.example');
    expect(installCommand({ ...base, accessMode: 'tunnel', context: '  ', repo: '' })).toBe('freshet runtime install edge-1 --token frt_ab12_secret --control-plane https://freshet.example');
  });
  it('adds context, ingress and repository in the documented order', () => {
    expect(installCommand({ ...base, context: 'prod-eu', accessMode: 'ingress', ingressHost: 'edge.example.com', repo: 'https://github.com/acme/edge-1-runtime.git' })).toBe(
      'freshet runtime install edge-1 --token frt_ab12_secret --context prod-eu --access-mode ingress --ingress-host edge.example.com --repo https://github.com/acme/edge-1-runtime.git --control-plane https://freshet.example',
    );
  });
  it('quotes what a shell would split or expand', () => {
    expect(shellQuote('kind-e2e')).toBe('kind-e2e');
    expect(shellQuote('arn:aws:eks:eu-west-1:1234:cluster/prod')).toBe('arn:aws:eks:eu-west-1:1234:cluster/prod');
    expect(shellQuote('my context')).toBe("'my context'");
    expect(shellQuote("it's $HOME")).toBe(`'it'\\''s $HOME'`);
    expect(shellQuote('')).toBe("''");
    expect(installCommand({ ...base, context: 'team a' })).toContain("--context 'team a' --control-plane");
  });
  it('says how to add a cluster with the CLI', () => {
    expect(clusterAddCommand('local')).toBe('freshet cluster add NAME --runtime local --context CTX');
    expect(clusterAddCommand('edge-1', 'prod', 'prod-eu')).toBe('freshet cluster add prod --runtime edge-1 --context prod-eu');
  });
});

describe('Git Source body', () => {
  const form = (f: Partial<GitSourceForm>): GitSourceForm => ({ ...emptyGitSourceForm(), ...f });
  it('is the GitSource resource, with empty fields left out', () => {
    expect(gitSourceBody(form({ name: 'prod-apps', repoURL: ' https://github.com/acme/apps.git ' }))).toEqual({
      apiVersion: 'freshet.dev/v1',
      kind: 'GitSource',
      metadata: { name: 'prod-apps' },
      spec: { repoURL: 'https://github.com/acme/apps.git' },
    });
  });
  it('carries every field, and the destination by name or server', () => {
    const full = form({ name: 'p', repoURL: 'file:///r.git', path: 'prod', targetRevision: 'main', include: '*.yaml', exclude: 'drafts/*', destination: 'in-cluster', namespace: 'prod' });
    expect(gitSourceBody(full).spec).toEqual({
      repoURL: 'file:///r.git',
      path: 'prod',
      targetRevision: 'main',
      include: '*.yaml',
      exclude: 'drafts/*',
      destination: { name: 'in-cluster', namespace: 'prod' },
    });
    expect(gitSourceBody({ ...full, destinationBy: 'server', destination: 'https://10.0.0.1:6443', namespace: '' }).spec.destination).toEqual({ server: 'https://10.0.0.1:6443' });
    expect(gitSourceBody({ ...full, destination: '', namespace: 'only-ns' }).spec.destination).toEqual({ namespace: 'only-ns' });
  });
  it('round-trips through the edit form', () => {
    const g = gitSourceBody(form({ name: 'p', repoURL: 'https://x/r.git', path: 'a/b', destinationBy: 'server', destination: 'https://k:6443', namespace: 'n' }));
    expect(gitSourceBody(gitSourceForm(g))).toEqual(g);
    const bare = gitSourceBody(form({ name: 'q', repoURL: 'https://x/r.git' }));
    expect(gitSourceForm(bare)).toEqual(form({ name: 'q', repoURL: 'https://x/r.git' }));
  });
  it('says what is wrong before a round trip', () => {
    expect(gitSourceErrors(form({ name: 'p', repoURL: 'https://x/r.git' }))).toEqual({});
    const e = gitSourceErrors(form({ name: 'P', repoURL: '', path: '../up', destination: 'Bad Name', namespace: 'NS' }));
    expect(Object.keys(e).sort()).toEqual(['destination', 'name', 'namespace', 'path', 'repoURL']);
    expect(e.repoURL).toBe('Repository URL is required.');
    expect(gitSourceErrors(form({ name: 'p', repoURL: 'https://x/r.git', destinationBy: 'server', destination: 'k8s.local' })).destination).toContain('is not an API server URL');
  });
  it('maps the runtime’s field names to the form', () => {
    expect(gitSourceFieldOf('metadata.name')).toBe('name');
    expect(gitSourceFieldOf('spec.repoURL')).toBe('repoURL');
    expect(gitSourceFieldOf('spec.include')).toBe('include');
    expect(gitSourceFieldOf('spec.destination')).toBe('destination');
    expect(gitSourceFieldOf('gitSource')).toBeUndefined();
    expect(gitSourceFieldOf(undefined)).toBeUndefined();
  });
});

describe('New application', () => {
  it('starts from an Application for the runtime’s own cluster', () => {
    const t = applicationTemplate();
    expect(t).toMatch(/^apiVersion: argoproj.io\/v1alpha1\nkind: Application\n/);
    expect(t).toContain('  name: guestbook\n');
    expect(t).toContain('    name: in-cluster\n    namespace: guestbook\n');
    expect(applicationTemplate({ name: 'web', repoURL: 'file:///r.git', path: 'web' })).toContain('    repoURL: file:///r.git\n    path: web\n');
  });
  it('places the runtime’s line-numbered problems on their lines', () => {
    expect(manifestIssues('line 13: spec.sourcee: unknown field; valid fields are source, sources', 'spec.sourcee')).toEqual([
      { line: 13, column: 0, field: 'spec.sourcee', message: 'unknown field; valid fields are source, sources', severity: 'error' },
    ]);
    const two = manifestIssues('2 problems: line 5: spec.project: "" is required; line 9: spec.destination.namespace: "A" is not a namespace');
    expect(two.map((i) => [i.line, i.field, i.message])).toEqual([
      [5, 'spec.project', '"" is required'],
      [9, 'spec.destination.namespace', '"A" is not a namespace'],
    ]);
    expect([...marksByLine(two, 20).keys()]).toEqual([5, 9]);
  });
  it('reads the runtime’s answer as it is sent', () => {
    const msg =
      '2 problems: line 8: spec.sourcee: unknown field; did you mean "source"? valid fields here: destination, ignoreDifferences, info, project, revisionHistoryLimit, source, sources, syncPolicy; line 6: spec.source: is required (repoURL, path, targetRevision)';
    const got = manifestIssues(msg, 'spec.sourcee');
    expect(got.map((i) => [i.line, i.field])).toEqual([
      [8, 'spec.sourcee'],
      [6, 'spec.source'],
    ]);
    expect(got[0].message).toBe('unknown field; did you mean "source"? valid fields here: destination, ignoreDifferences, info, project, revisionHistoryLimit, source, sources, syncPolicy');
    expect(got[1].message).toBe('is required (repoURL, path, targetRevision)');
  });
  it('keeps a problem without a line for the whole document', () => {
    expect(manifestIssues('application "web" exists: use upsert', undefined)).toEqual([{ line: 0, column: 0, field: undefined, message: 'application "web" exists: use upsert', severity: 'error' }]);
    expect(manifestIssues('line 3: is not valid YAML: mapping values are not allowed here')[0]).toMatchObject({ line: 3, field: undefined, message: 'is not valid YAML: mapping values are not allowed here' });
  });
});

describe('repository browsing', () => {
  const form = (o: Partial<RepoBrowseForm> = {}): RepoBrowseForm => ({ provider: 'github', baseURL: '', owner: '', token: 'tok', ...o });

  it('needs an API URL for gitea only, and a token always', () => {
    expect(repoBrowseErrors(form())).toEqual({});
    expect(repoBrowseErrors(form({ provider: 'gitlab' }))).toEqual({});
    expect(repoBrowseErrors(form({ provider: 'gitea' })).baseURL).toMatch(/Gitea needs its API URL/);
    expect(repoBrowseErrors(form({ provider: 'gitea', baseURL: 'http://127.0.0.1:3000' }))).toEqual({});
    expect(repoBrowseErrors(form({ baseURL: 'gitea.example.com' })).baseURL).toMatch(/not an http\(s\) URL/);
    expect(repoBrowseErrors(form({ owner: 'a b' })).owner).toMatch(/space/);
    expect(repoBrowseErrors(form({ token: '  ' })).token).toMatch(/token is required/);
  });

  it('builds the query without empty fields and without the token', () => {
    expect(repoQuery(form())).toEqual({ provider: 'github' });
    const q = repoQuery(form({ provider: 'gitea', baseURL: ' https://git.example.com/ ', owner: ' ops ' }));
    expect(q).toEqual({ provider: 'gitea', baseURL: 'https://git.example.com', owner: 'ops' });
    expect(buildQuery(q)).toBe('?provider=gitea&baseURL=https%3A%2F%2Fgit.example.com&owner=ops');
    expect(JSON.stringify(q)).not.toContain('tok');
  });
});
