// The logic of the runtime and GitOps forms, apart from the pages so that it is tested: names
// checked as the server checks them, the exact CLI commands the UI shows, a Git Source from its
// form and back, the Application template, and the app-proxy's line-numbered errors placed on
// the editor's lines.
import type { GitSource } from '../api/gitops';
import type { LintIssue } from './lint';

// ─── Names ───

/** A runtime name as internal/runtimes checks it (nameRE): 1–40 characters. */
const RUNTIME_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$/;
export const RUNTIME_NAME_MAX = 40;

/** The server's rule for runtime names, said the way the server says it. */
export function runtimeNameError(v: string): string | undefined {
  if (!v) return 'Name is required.';
  if (v.length > RUNTIME_NAME_MAX) return `Name "${v}" is longer than ${RUNTIME_NAME_MAX} characters.`;
  if (!RUNTIME_NAME_RE.test(v)) return `Name "${v}" is not a runtime name: use lowercase letters, digits and '-', starting and ending with a letter or digit.`;
  return undefined;
}

/** A cluster or Git Source name as the runtime checks it (DNS-1123 label: 1–63 characters). */
const LABEL_NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
export const LABEL_NAME_MAX = 63;

export function gitSourceNameError(v: string): string | undefined {
  if (!v) return 'Name is required.';
  if (v.length > LABEL_NAME_MAX) return `Name "${v}" is longer than ${LABEL_NAME_MAX} characters.`;
  if (!LABEL_NAME_RE.test(v)) return `Name "${v}" is not valid: use lowercase letters, digits and '-', starting and ending with a letter or digit.`;
  return undefined;
}

// ─── Commands ───

/** A word for a POSIX shell: as is when it is plain, else in single quotes. */
export function shellQuote(s: string): string {
  if (s !== '' && /^[A-Za-z0-9_@%+=:,./~-]+$/.test(s)) return s;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

export interface InstallCommandOptions {
  name: string;
  token: string;
  /** The control plane's URL (this page's origin). */
  server: string;
  accessMode?: 'tunnel' | 'ingress';
  ingressHost?: string;
  repo?: string;
  context?: string;
}

/**
 * The `freshet runtime install` command for a runtime registered by the wizard: --token makes
 * install use it instead of registering one (docs/runtimes.md, "Installing a hybrid runtime").
 */
export function installCommand(o: InstallCommandOptions): string {
  const parts = ['freshet runtime install', shellQuote(o.name), '--token', shellQuote(o.token)];
  const ctx = o.context?.trim();
  if (ctx) parts.push('--context', shellQuote(ctx));
  if (o.accessMode === 'ingress') parts.push('--access-mode ingress', '--ingress-host', shellQuote(o.ingressHost?.trim() ?? ''));
  const repo = o.repo?.trim();
  if (repo) parts.push('--repo', shellQuote(repo));
  parts.push('--control-plane', shellQuote(o.server));
  return parts.join(' ');
}

/** How a runtime is given a cluster: the CLI reads the kubeconfig, which the browser cannot. */
export function clusterAddCommand(runtime: string, cluster = 'NAME', context = 'CTX'): string {
  return `freshet cluster add ${cluster} --runtime ${shellQuote(runtime)} --context ${context}`;
}

// ─── Git Sources ───

export interface GitSourceForm {
  name: string;
  repoURL: string;
  path: string;
  targetRevision: string;
  include: string;
  exclude: string;
  /** Whether `destination` is a cluster name or an API server URL. */
  destinationBy: 'name' | 'server';
  destination: string;
  namespace: string;
}

export type GitSourceErrors = Partial<Record<keyof GitSourceForm, string>>;

export function emptyGitSourceForm(): GitSourceForm {
  return { name: '', repoURL: '', path: '', targetRevision: '', include: '', exclude: '', destinationBy: 'name', destination: '', namespace: '' };
}

/** The form of an existing Git Source, for editing. */
export function gitSourceForm(g: GitSource): GitSourceForm {
  const d = g.spec.destination ?? {};
  return {
    name: g.metadata.name,
    repoURL: g.spec.repoURL ?? '',
    path: g.spec.path ?? '',
    targetRevision: g.spec.targetRevision ?? '',
    include: g.spec.include ?? '',
    exclude: g.spec.exclude ?? '',
    destinationBy: d.server && !d.name ? 'server' : 'name',
    destination: d.server && !d.name ? d.server : (d.name ?? ''),
    namespace: d.namespace ?? '',
  };
}

/** The GitSource the app-proxy takes (docs/appproxy.md): trimmed, empty fields left out. */
export function gitSourceBody(f: GitSourceForm): GitSource {
  const spec: GitSource['spec'] = { repoURL: f.repoURL.trim() };
  const opt = (k: 'path' | 'targetRevision' | 'include' | 'exclude') => {
    const v = f[k].trim();
    if (v) spec[k] = v;
  };
  opt('path');
  opt('targetRevision');
  opt('include');
  opt('exclude');
  const dest = f.destination.trim();
  const ns = f.namespace.trim();
  if (dest || ns) {
    spec.destination = {};
    if (dest) spec.destination[f.destinationBy] = dest;
    if (ns) spec.destination.namespace = ns;
  }
  return { apiVersion: 'freshet.dev/v1', kind: 'GitSource', metadata: { name: f.name.trim() }, spec };
}

/** What the form can say before a round trip; the runtime checks the rest (globs, URLs). */
export function gitSourceErrors(f: GitSourceForm): GitSourceErrors {
  const e: GitSourceErrors = {};
  e.name = gitSourceNameError(f.name.trim());
  const repo = f.repoURL.trim();
  if (!repo) e.repoURL = 'Repository URL is required.';
  else if (/\s/.test(repo)) e.repoURL = `"${repo}" is not a repository URL: it has a space.`;
  if (f.path.split('/').includes('..')) e.path = `Path "${f.path.trim()}" must stay inside the repository.`;
  const dest = f.destination.trim();
  if (dest && f.destinationBy === 'server' && !/^https?:\/\/\S+$/.test(dest)) e.destination = `"${dest}" is not an API server URL (like https://10.0.0.1:6443).`;
  if (dest && f.destinationBy === 'name' && !LABEL_NAME_RE.test(dest)) e.destination = `"${dest}" is not a cluster name.`;
  const ns = f.namespace.trim();
  if (ns && !LABEL_NAME_RE.test(ns)) e.namespace = `"${ns}" is not a namespace name (lowercase letters, digits and '-').`;
  for (const k of Object.keys(e) as (keyof GitSourceForm)[]) if (!e[k]) delete e[k];
  return e;
}

/** The form field an app-proxy error names (spec.repoURL → repoURL); undefined for the rest. */
export function gitSourceFieldOf(apiField: string | undefined): keyof GitSourceForm | undefined {
  switch (apiField) {
    case 'metadata.name':
      return 'name';
    case 'spec.repoURL':
      return 'repoURL';
    case 'spec.path':
      return 'path';
    case 'spec.targetRevision':
      return 'targetRevision';
    case 'spec.include':
      return 'include';
    case 'spec.exclude':
      return 'exclude';
    case 'spec.destination':
    case 'spec.destination.name':
    case 'spec.destination.server':
      return 'destination';
    case 'spec.destination.namespace':
      return 'namespace';
    default:
      return undefined;
  }
}

// ─── Applications ───

export interface AppTemplateOptions {
  name?: string;
  repoURL?: string;
  path?: string;
  namespace?: string;
  /** The destination cluster by name; in-cluster (the runtime's own) by default. */
  cluster?: string;
}

/** An Argo CD Application to start from in the New application editor. */
export function applicationTemplate(o: AppTemplateOptions = {}): string {
  const name = o.name || 'guestbook';
  return [
    'apiVersion: argoproj.io/v1alpha1',
    'kind: Application',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    '  project: default',
    '  source:',
    `    repoURL: ${o.repoURL || 'https://github.com/argoproj/argocd-example-apps.git'}`,
    `    path: ${o.path || 'guestbook'}`,
    '    targetRevision: HEAD',
    '  destination:',
    `    name: ${o.cluster || 'in-cluster'}`,
    `    namespace: ${o.namespace || name}`,
    '  syncPolicy:',
    '    # automated: {prune: true, selfHeal: true}',
    '    syncOptions:',
    '      - CreateNamespace=true',
    '',
  ].join('\n');
}

/**
 * The problems in an app-proxy error about a manifest, placed on lines: its messages read
 * "line 13: spec.sourcee: unknown field; …", or "2 problems: line 5: …; line 9: …". A message
 * without a line is one problem of the whole document.
 */
export function manifestIssues(message: string, field?: string): LintIssue[] {
  const starts = [...message.matchAll(/line (\d+): /g)];
  if (starts.length === 0) return [{ line: 0, column: 0, field, message, severity: 'error' }];
  return starts.map((m, i) => {
    const from = m.index! + m[0].length;
    const to = i + 1 < starts.length ? starts[i + 1].index! : message.length;
    let text = message.slice(from, to).replace(/;\s*$/, '').trim();
    // The field path comes first: no spaces, then ": ".
    const fm = /^([^\s:]+): /.exec(text);
    let f: string | undefined;
    if (fm) {
      f = fm[1];
      text = text.slice(fm[0].length);
    }
    return { line: Number(m[1]), column: 0, field: f, message: text, severity: 'error' as const };
  });
}

// ─── The install wizard ───

export const INSTALL_STEPS = ['Name', 'Access', 'Repository', 'Cluster'] as const;

/** The wizard step where a field the server refused is entered. */
export function installStepOf(field: string | undefined): number | undefined {
  switch (field) {
    case 'name':
      return 0;
    case 'accessMode':
    case 'ingressHost':
      return 1;
    case 'repo':
      return 2;
    default:
      return undefined;
  }
}

/** An installation repository as `git clone` takes it: a URL, or scp-like user@host:path. */
export function repoURLError(v: string): string | undefined {
  const s = v.trim();
  if (!s) return undefined;
  if (/^(https?|ssh|git|file):\/\/\S+$/.test(s) || /^[\w.-]+@[\w.-]+:\S+$/.test(s)) return undefined;
  return `"${s}" is not a repository URL: use https://host/owner/repo.git, ssh://… or git@host:owner/repo.git.`;
}

/** The ingress host, checked as the server does: a host name or an https URL with a host. */
export function ingressHostError(v: string): string | undefined {
  const s = v.trim();
  if (!s) return 'Ingress host is required in ingress mode: the host or URL the app-proxy is reachable at.';
  let host = '';
  try {
    host = new URL(s.includes('://') ? s : `https://${s}`).host;
  } catch {
    host = '';
  }
  if (!host || /\s/.test(s)) return `"${s}" is not a host name or https URL.`;
  return undefined;
}

// ─── Browsing a git provider's repositories (Settings → Git integrations) ───

export const GIT_PROVIDERS = [
  { id: 'github', label: 'GitHub', apiHint: 'Empty for github.com; GitHub Enterprise: https://HOST/api/v3' },
  { id: 'gitlab', label: 'GitLab', apiHint: 'Empty for gitlab.com; self-hosted: https://gitlab.example.com' },
  { id: 'gitea', label: 'Gitea / Forgejo', apiHint: "Required: the server's URL, e.g. https://gitea.example.com" },
] as const;

export type GitProvider = (typeof GIT_PROVIDERS)[number]['id'];

export interface RepoBrowseForm {
  provider: GitProvider;
  baseURL: string;
  owner: string;
  token: string;
}

export type RepoBrowseErrors = Partial<Record<keyof RepoBrowseForm, string>>;

/** What the form can say before asking the runtime: Gitea has no default server; URLs are http(s). */
export function repoBrowseErrors(f: RepoBrowseForm): RepoBrowseErrors {
  const e: RepoBrowseErrors = {};
  const base = f.baseURL.trim();
  if (!base && f.provider === 'gitea') e.baseURL = "Gitea needs its API URL: the server's URL, e.g. https://gitea.example.com.";
  else if (base && !/^https?:\/\/[^\s/]+\S*$/.test(base)) e.baseURL = `"${base}" is not an http(s) URL.`;
  const owner = f.owner.trim();
  if (owner && /\s/.test(owner)) e.owner = `"${owner}" is not an owner name: it has a space.`;
  if (!f.token.trim()) e.token = 'A personal access token is required: the provider lists the repositories it may read.';
  return e;
}

/** The query of GET …/git/repositories: trimmed, empty fields left out (buildQuery drops them). */
export function repoQuery(f: RepoBrowseForm): { provider: string; baseURL?: string; owner?: string } {
  const q: { provider: string; baseURL?: string; owner?: string } = { provider: f.provider };
  const base = f.baseURL.trim().replace(/\/+$/, '');
  const owner = f.owner.trim();
  if (base) q.baseURL = base;
  if (owner) q.owner = owner;
  return q;
}
