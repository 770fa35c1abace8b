// GitOps applications: each runtime's live app-proxy API (docs/appproxy.md), reached through
// the control plane at /runtimes/{runtime}/app-proxy/…, and the account-wide list in GraphQL
// (api/graphql/schema.graphql). Loaded with the Applications pages, not on first load.
import { ApiError, buildQuery, errorFromResponse, request } from './client';
import { gql } from './graphql';

const seg = encodeURIComponent;

// ─── The app-proxy's types (api/appproxyv1), checked against its golden JSON by wire.test.ts ───

export type SyncCode = 'Synced' | 'OutOfSync' | 'Unknown';
export const syncCodes: readonly SyncCode[] = ['Synced', 'OutOfSync', 'Unknown'];
export type HealthStatus = 'Healthy' | 'Progressing' | 'Degraded' | 'Suspended' | 'Missing' | 'Unknown';
export const healthStatuses: readonly HealthStatus[] = ['Healthy', 'Progressing', 'Degraded', 'Suspended', 'Missing', 'Unknown'];

export interface ResourceKey {
  group?: string;
  kind: string;
  namespace?: string;
  name: string;
}

export interface HealthResult {
  status: string;
  message?: string;
}

/** A place in the source repository: a file and its line (0 or absent when unknown). */
export interface SourceLocation {
  file?: string;
  line?: number;
}

export interface CommitRange {
  kind: 'range' | 'first' | 'rollback' | 'unchanged' | string;
  from?: string;
  to?: string;
  commits?: CommitInfo[];
  truncated?: boolean;
}

export interface CommitInfo {
  sha: string;
  author: string;
  authorEmail?: string;
  authorTime: string;
  committer?: string;
  committerEmail?: string;
  commitTime: string;
  message: string;
  parents?: string[];
}

export interface Condition {
  type: string;
  message: string;
  source?: SourceLocation;
  since: string;
}

export interface ResourceStatus extends ResourceKey {
  version: string;
  status: SyncCode | string;
  health?: HealthResult;
  requiresPruning?: boolean;
  hook?: boolean;
  syncWave?: number;
  source?: SourceLocation;
  message?: string;
}

export interface ResourceResult extends ResourceKey {
  version: string;
  result: string;
  wave: number;
  message?: string;
}

export interface HookResult extends ResourceKey {
  version: string;
  type: string;
  wave: number;
  phase: string;
  message?: string;
  deleted?: boolean;
}

export type OperationPhase = 'Running' | 'Succeeded' | 'Failed' | 'Error';

export interface SyncResult {
  revision: string;
  phase: OperationPhase | string;
  message?: string;
  resources?: ResourceResult[];
  hooks?: HookResult[];
  dryRun?: boolean;
  prune?: boolean;
  initiatedBy: string;
  /** Who asked, for user syncs and rollbacks. */
  user?: string;
  startedAt: string;
  finishedAt?: string;
  temporary?: boolean;
}

export interface AppStatus {
  name: string;
  /** The owning application (app of apps) or ApplicationSet. */
  owner?: string;
  /** The owner's kind: Application or ApplicationSet. */
  ownerKind?: string;
  project: string;
  sync: SyncCode | string;
  revision?: string;
  targetRevision?: string;
  commit?: CommitInfo;
  sourceType?: string;
  health: HealthResult;
  resources?: ResourceStatus[];
  conditions?: Condition[];
  operation?: SyncResult;
  autoSyncDisabled?: boolean;
  reconciledAt: string;
}

export interface AppSource {
  repoURL: string;
  path?: string;
  targetRevision?: string;
  chart?: string;
  ref?: string;
  name?: string;
  /** Helm, Kustomize and directory options: Argo CD's, not modelled here. */
  helm?: unknown;
  kustomize?: unknown;
  directory?: unknown;
}

export interface Destination {
  server?: string;
  name?: string;
  namespace?: string;
}

export interface AppMetadata {
  name: string;
  namespace?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}

export interface AppSyncPolicyAutomated {
  prune?: boolean;
  selfHeal?: boolean;
  allowEmpty?: boolean;
  enabled?: boolean;
}

export interface AppSyncPolicy {
  automated?: AppSyncPolicyAutomated;
  syncOptions?: string[];
  /** Argo CD's, not modelled here. */
  retry?: unknown;
  managedNamespaceMetadata?: unknown;
}

/** Parts of live objects that diffs ignore. */
export interface AppIgnoreDifferences {
  group?: string;
  kind: string;
  name?: string;
  namespace?: string;
  jsonPointers?: string[];
  jqPathExpressions?: string[];
  managedFieldsManagers?: string[];
}

/** A free-form name/value shown with an application. */
export interface AppInfo {
  name: string;
  value: string;
}

export interface AppSpec {
  source?: AppSource;
  sources?: AppSource[];
  destination: Destination;
  project: string;
  syncPolicy?: AppSyncPolicy;
  ignoreDifferences?: AppIgnoreDifferences[];
  info?: AppInfo[];
  revisionHistoryLimit?: number;
}

/** The Argo CD Application (appproxyv1.ApplicationManifest). */
export interface ApplicationSpec {
  apiVersion: string;
  kind: string;
  metadata: AppMetadata;
  spec: AppSpec;
}

/** An application as the app-proxy answers it. */
export interface ProxyApplication {
  name: string;
  /** Where it is defined: apps/<name>.yaml, or its Git Source's file. */
  file?: string;
  /** The Git Source it comes from. */
  gitSource?: string;
  /** The application whose manifests define this one (app of apps), or the ApplicationSet that generates it; absent for one defined in git. */
  owner?: string;
  /** The owner's kind: Application or ApplicationSet. */
  ownerKind?: string;
  /** Absent while the runtime removes the application. */
  spec?: ApplicationSpec;
  status: AppStatus;
}

/** A collection the app-proxy answers. */
export interface ProxyList<T> {
  items: T[];
}

export interface ResourceDiff extends ResourceKey {
  version: string;
  /** Synced, OutOfSync, Missing or RequiresPruning. */
  status: string;
  source?: SourceLocation;
  /** Unified diff from live to desired; empty when Synced. */
  diff?: string;
  message?: string;
}

export interface HistoryEntry {
  id: number;
  revision: string;
  source: AppSource;
  /** A multi-source app's sources when it was synced, and each one's revision, in order. */
  sources?: AppSource[];
  revisions?: string[];
  commit?: CommitInfo;
  /** What the sync brought from the source repository (git log from..to), newest first. */
  range?: CommitRange;
  phase: OperationPhase | string;
  message?: string;
  changed?: ResourceResult[];
  initiatedBy: string;
  user?: string;
  startedAt: string;
  finishedAt: string;
  /** Nanoseconds (a Go time.Duration). */
  duration: number;
}

export interface TreeNode extends ResourceKey {
  version: string;
  uid: string;
  health: HealthResult;
  /** Managed resources only. */
  sync?: string;
  /** Always sent; absent on the placeholders lib/appTree.ts adds. */
  createdAt?: string;
  images?: string[];
  /** A hook object (a PostSync Job, say) a sync created and its delete policy kept. */
  hook?: boolean;
  /** What the network view draws: a Pod's labels, a Service's selector, an Ingress's backends. */
  network?: TreeNetwork;
  children?: TreeNode[];
}

export interface TreeNetwork {
  labels?: Record<string, string>;
  selector?: Record<string, string>;
  /** The Services an Ingress routes to. */
  backends?: string[];
}

/** One object of the tree with its manifests (GET …/resource). */
export interface ResourceDetail extends ResourceKey {
  version: string;
  uid?: string;
  /** Rendered by the application; otherwise owned by a managed resource (no desired state). */
  managed: boolean;
  /** Managed: Synced, OutOfSync, Missing or RequiresPruning. */
  status?: string;
  live?: Record<string, unknown>;
  desired?: Record<string, unknown>;
  /** Unified diff from live to desired; empty when Synced or not managed. */
  diff?: string;
  message?: string;
}

export interface ResourceEvent {
  type: string;
  reason: string;
  message: string;
  count: number;
  source?: string;
  firstSeen: string;
  lastSeen: string;
}

export interface RestartResult {
  restartedAt: string;
}

export type DeletePropagation = 'foreground' | 'background' | 'orphan';

/** The query naming one object of an application's tree. */
export function resourceQuery(k: ResourceKey): Record<string, string | undefined> {
  return { group: k.group || undefined, kind: k.kind, namespace: k.namespace || undefined, name: k.name };
}

export interface RollbackRequest {
  /** The history entry. */
  id: number;
  prune: boolean;
}

export interface RollbackResult {
  result: SyncResult;
  entry: HistoryEntry;
  /** Automated sync was on and the rollback switched it off. */
  autoSyncDisabled?: boolean;
}

export interface SyncRequest {
  revision?: string;
  prune?: boolean;
  dryRun?: boolean;
  /** GROUP/KIND/NAMESPACE/NAME (KIND/NAME also works). */
  resources?: string[];
  /** Sync options for this sync ("CreateNamespace=true", ...). */
  options?: string[];
}

export interface AutoSyncRequest {
  enabled: boolean;
}

export interface TerminateResult {
  /** Whether a sync was running. */
  terminated: boolean;
}

/** The app-proxy's applications API on one runtime. */
export const appProxy = {
  base: (runtime: string) => `/runtimes/${seg(runtime)}/app-proxy/api/v1/applications`,
  list: (runtime: string, signal?: AbortSignal) => request<ProxyList<ProxyApplication>>(appProxy.base(runtime), { signal }),
  get: (runtime: string, name: string, signal?: AbortSignal) => request<ProxyApplication>(`${appProxy.base(runtime)}/${seg(name)}`, { signal }),
  diff: (runtime: string, name: string, signal?: AbortSignal) => request<ProxyList<ResourceDiff>>(`${appProxy.base(runtime)}/${seg(name)}/diff`, { signal }),
  tree: (runtime: string, name: string, signal?: AbortSignal) => request<ProxyList<TreeNode>>(`${appProxy.base(runtime)}/${seg(name)}/tree`, { signal }),
  history: (runtime: string, name: string, signal?: AbortSignal) => request<ProxyList<HistoryEntry>>(`${appProxy.base(runtime)}/${seg(name)}/history`, { signal }),
  sync: (runtime: string, name: string, body: SyncRequest) => request<SyncResult>(`${appProxy.base(runtime)}/${seg(name)}/sync`, { method: 'POST', body }),
  refresh: (runtime: string, name: string, hard: boolean) =>
    request<ProxyApplication>(`${appProxy.base(runtime)}/${seg(name)}/refresh`, { method: 'POST', query: { hard: hard ? 'true' : undefined } }),
  rollback: (runtime: string, name: string, id: number, prune: boolean) =>
    request<RollbackResult>(`${appProxy.base(runtime)}/${seg(name)}/rollback`, { method: 'POST', body: { id, prune } satisfies RollbackRequest }),
  terminate: (runtime: string, name: string) => request<TerminateResult>(`${appProxy.base(runtime)}/${seg(name)}/terminate`, { method: 'POST' }),
  remove: (runtime: string, name: string, cascade: boolean) =>
    request<void>(`${appProxy.base(runtime)}/${seg(name)}`, { method: 'DELETE', query: { cascade: String(cascade) } }),
  /** Commits an Application (YAML as typed) to the installation repository, or to a Git Source's. */
  create: (runtime: string, manifest: string, gitSource?: string) =>
    request<ProxyApplication>(appProxy.base(runtime), { method: 'POST', raw: manifest, rawType: 'application/yaml', query: { gitSource: gitSource || undefined } }),
  /** One object of the tree: live and desired manifests and their diff. */
  resource: (runtime: string, name: string, k: ResourceKey, signal?: AbortSignal) =>
    request<ResourceDetail>(`${appProxy.base(runtime)}/${seg(name)}/resource`, { query: resourceQuery(k), signal }),
  resourceEvents: (runtime: string, name: string, k: ResourceKey, signal?: AbortSignal) =>
    request<ProxyList<ResourceEvent>>(`${appProxy.base(runtime)}/${seg(name)}/resource/events`, { query: resourceQuery(k), signal }),
  /** The URL of a Pod's log (text/plain; follow streams it). */
  resourceLogsPath: (runtime: string, name: string) => `${appProxy.base(runtime)}/${seg(name)}/resource/logs`,
  deleteResource: (runtime: string, name: string, k: ResourceKey, propagation: DeletePropagation) =>
    request<void>(`${appProxy.base(runtime)}/${seg(name)}/resource`, { method: 'DELETE', query: { ...resourceQuery(k), propagation } }),
  restartResource: (runtime: string, name: string, k: ResourceKey) =>
    request<RestartResult>(`${appProxy.base(runtime)}/${seg(name)}/resource/restart`, { method: 'POST', query: resourceQuery(k) }),
  /** Switches automated sync back on (or off); a rollback switches it off. */
  setAutoSync: (runtime: string, name: string, enabled: boolean) =>
    request<ProxyApplication>(`${appProxy.base(runtime)}/${seg(name)}/auto-sync`, { method: 'POST', body: { enabled } satisfies AutoSyncRequest }),
};

/**
 * Reads a Pod's log as it comes (follow: until the container ends or signal aborts), calling
 * onText with each piece. An error answer (before the stream) throws its ApiError.
 */
export async function streamPodLog(
  runtime: string,
  app: string,
  k: ResourceKey,
  opts: { container?: string; follow: boolean; tailLines?: number },
  onText: (text: string) => void,
  signal: AbortSignal,
): Promise<void> {
  const q = { ...resourceQuery(k), container: opts.container || undefined, follow: String(opts.follow), tailLines: opts.tailLines };
  const res = await fetch(appProxy.resourceLogsPath(runtime, app) + buildQuery(q), { credentials: 'same-origin', signal, headers: { Accept: 'text/plain' } });
  if (!res.ok) throw await errorFromResponse(res);
  if (!res.body) {
    onText(await res.text());
    return;
  }
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    onText(dec.decode(value, { stream: true }));
  }
}

// ─── The account-wide list (GraphQL) ───

/** One row of the Applications list, from GraphQL or built from an app-proxy answer. */
export interface AppSummary {
  id: string;
  runtime: string;
  name: string;
  project: string;
  labels: { key: string; value: string }[];
  repoUrl?: string;
  path?: string;
  targetRevision?: string;
  destination: Destination;
  autoSync: boolean;
  autoSyncDisabled: boolean;
  syncStatus: string;
  healthStatus: string;
  healthMessage?: string;
  revision?: string;
  commit?: { sha: string; author?: string; message?: string; time?: string };
  reconciledAt?: string;
  /** The first condition that is a problem (a ComparisonError, a missing cluster) as "Type: message" (GraphQL `problem`). */
  problem?: string | null;
}

/** ApplicationFilter of the schema; labels are "key=value". */
export interface ApplicationFilter {
  runtime?: string;
  cluster?: string;
  health?: string;
  sync?: string;
  project?: string;
  labels?: string[];
  search?: string;
}

const APPLICATIONS_QUERY = `query Applications($filter: ApplicationFilter, $first: Int, $after: String) {
  applications(filter: $filter, first: $first, after: $after) {
    nodes {
      id runtime name project labels { key value } repoUrl path targetRevision
      destination { server name namespace } autoSync autoSyncDisabled
      syncStatus healthStatus healthMessage revision commit { sha author message time } reconciledAt
      problem
    }
    pageInfo { endCursor hasNextPage }
  }
}`;

export interface AppPage {
  items: AppSummary[];
  nextCursor?: string;
}

export async function listApplications(filter: ApplicationFilter, first: number, after: string | undefined, signal?: AbortSignal): Promise<AppPage> {
  const d = await gql<{ applications: { nodes: AppSummary[]; pageInfo: { endCursor?: string | null; hasNextPage: boolean } } }>(
    APPLICATIONS_QUERY,
    { filter, first, after: after ?? null },
    signal,
  );
  const c = d.applications;
  return { items: c.nodes, nextCursor: c.pageInfo.hasNextPage && c.pageInfo.endCursor ? c.pageInfo.endCursor : undefined };
}

/** The account's runtimes with their clusters, for the filters and the app-proxy fallback. */
export interface RuntimeRef {
  name: string;
  status: string;
  clusters: { name: string; server: string }[];
}

export async function listRuntimeRefs(signal?: AbortSignal): Promise<RuntimeRef[]> {
  const d = await gql<{ runtimes: RuntimeRef[] }>(`query AppRuntimes { runtimes { name status clusters { name server } } }`, undefined, signal);
  return d.runtimes;
}

/**
 * True when the server's GraphQL schema has no applications yet (a server older than the
 * Applications API): the UI then reads each runtime's app-proxy instead.
 */
export function isMissingApplicationsField(err: unknown): boolean {
  return err instanceof ApiError && /Cannot query field "applications?"|Unknown type "Application/.test(err.message);
}
