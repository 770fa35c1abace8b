// A runtime's clusters and Git Sources on its app-proxy (docs/appproxy.md; the types are
// api/appproxyv1's, checked against its golden JSON by wire.test.ts), reached through the
// control plane at /runtimes/{runtime}/app-proxy/…, and the account's GitOps push webhook
// (REST, api/openapi.yaml). Loaded with the pages that use them, not on first load.
import type { ProxyList } from './apps';
import { request } from './client';

const seg = encodeURIComponent;

/** A cluster a runtime deploys to (no credentials: the runtime alone keeps them). */
export interface ClusterRef {
  name: string;
  server: string;
  /** Labels ApplicationSet clusters generators select by. */
  labels?: Record<string, string>;
}

export interface GitSourceMetadata {
  name: string;
}

/** Where a Git Source's applications are. */
export interface GitSourceSpec {
  repoURL: string;
  path?: string;
  targetRevision?: string;
  /** Globs over file paths relative to path. */
  include?: string;
  exclude?: string;
  /** For the source's applications that name none. */
  destination?: { name?: string; server?: string; namespace?: string };
}

/** A directory of another repository whose Applications the runtime loads (app-of-apps). */
export interface GitSource {
  apiVersion: string;
  kind: string;
  metadata: GitSourceMetadata;
  spec: GitSourceSpec;
}

/** A repository a git provider lists for a token (GET …/git/repositories, docs/appproxy.md). */
export interface ProviderRepo {
  name: string;
  fullName: string;
  cloneUrl: string;
  sshUrl?: string;
  defaultBranch?: string;
  private: boolean;
  updatedAt?: string;
}

/** The query of a repository list: which provider, where, whose. */
export interface RepoQuery {
  provider: string;
  baseURL?: string;
  owner?: string;
}

/** The header that carries the caller's provider token; the runtime keeps nothing. */
export const GIT_TOKEN_HEADER = 'X-Git-Token';

const proxy = (runtime: string) => `/runtimes/${seg(runtime)}/app-proxy/api/v1`;

export const runtimeProxy = {
  clusters: (runtime: string, signal?: AbortSignal) => request<ProxyList<ClusterRef>>(`${proxy(runtime)}/clusters`, { signal }),
  removeCluster: (runtime: string, name: string) => request<void>(`${proxy(runtime)}/clusters/${seg(name)}`, { method: 'DELETE' }),
  gitSources: (runtime: string, signal?: AbortSignal) => request<ProxyList<GitSource>>(`${proxy(runtime)}/git-sources`, { signal }),
  /** Creates a Git Source, or with upsert replaces the one of that name. */
  putGitSource: (runtime: string, g: GitSource, upsert: boolean) =>
    request<GitSource>(`${proxy(runtime)}/git-sources`, { method: 'POST', body: g, query: { upsert: upsert ? 'true' : undefined } }),
  removeGitSource: (runtime: string, name: string) => request<void>(`${proxy(runtime)}/git-sources/${seg(name)}`, { method: 'DELETE' }),
  /** The repositories the provider lists for token; the token goes only in X-Git-Token. */
  repositories: (runtime: string, q: RepoQuery, token: string, signal?: AbortSignal) =>
    request<ProxyList<ProviderRepo>>(`${proxy(runtime)}/git/repositories`, {
      query: { provider: q.provider, baseURL: q.baseURL, owner: q.owner },
      headers: token ? { [GIT_TOKEN_HEADER]: token } : undefined,
      signal,
    }),
};

/** The account's GitOps push webhook: whether it has a secret, and its payload URL per provider. */
export interface GitOpsWebhook {
  configured: boolean;
  /** When the secret was set. */
  createdAt?: string;
  urls: Record<string, string>;
  /** Only in the answer that generated it. */
  secret?: string;
}

export const gitopsWebhook = {
  get: (signal?: AbortSignal) => request<GitOpsWebhook>('/api/v1/gitops/webhook', { signal }),
  /** Without a secret, one is generated and answered once. */
  set: (secret?: string) => request<GitOpsWebhook>('/api/v1/gitops/webhook', { method: 'POST', body: secret ? { secret } : {} }),
};
