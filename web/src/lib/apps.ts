// How applications are shown: health and sync badges, their URLs, auto-sync in words, a list
// row built from an app-proxy answer, counts for Home.
import type { AppSummary, Destination, HealthStatus, ProxyApplication, ResourceKey, SourceLocation, SyncCode } from '../api/apps';
import type { BadgeLook, Tone } from './tone';

const HEALTH: Record<HealthStatus, { tone: Tone; icon: string }> = {
  Healthy: { tone: 'success', icon: '♥' },
  Progressing: { tone: 'info', icon: '◔' },
  Degraded: { tone: 'danger', icon: '✕' },
  Suspended: { tone: 'neutral', icon: '❚❚' },
  Missing: { tone: 'warning', icon: '○' },
  Unknown: { tone: 'neutral', icon: '?' },
};

const SYNC: Record<SyncCode, { tone: Tone; icon: string; label: string }> = {
  Synced: { tone: 'success', icon: '✓', label: 'Synced' },
  OutOfSync: { tone: 'warning', icon: '↻', label: 'OutOfSync' },
  Unknown: { tone: 'neutral', icon: '?', label: 'Unknown' },
};

/** A health status's badge; a status this UI does not know is neutral and shown as is. */
export function healthBadge(status: string | undefined): BadgeLook {
  const s = (status || 'Unknown') as HealthStatus;
  const h = Object.hasOwn(HEALTH, s) ? HEALTH[s] : { tone: 'neutral' as Tone, icon: '?' };
  return { ...h, label: s };
}

/** A sync status's badge (Synced, OutOfSync, Unknown; the diff's Missing and RequiresPruning too). */
export function syncBadge(status: string | undefined): BadgeLook {
  const s = status || 'Unknown';
  if (Object.hasOwn(SYNC, s)) return SYNC[s as SyncCode];
  if (s === 'Missing') return { tone: 'warning', icon: '+', label: 'Missing' };
  if (s === 'RequiresPruning') return { tone: 'danger', icon: '−', label: 'RequiresPruning' };
  return { tone: 'neutral', icon: '?', label: s };
}

/** A sync operation's phase: Running, Succeeded, Failed, Error. */
export function phaseTone(phase: string | undefined): Tone {
  switch (phase) {
    case 'Succeeded':
      return 'success';
    case 'Running':
      return 'info';
    case 'Failed':
    case 'Error':
      return 'danger';
    default:
      return 'neutral';
  }
}

/** What a sync did to a resource (created, configured, pruned, …). */
export function resultTone(result: string): Tone {
  switch (result) {
    case 'created':
    case 'configured':
    case 'pruned':
      return 'success';
    case 'failed':
      return 'danger';
    case 'pruneSkipped':
      return 'warning';
    default:
      return 'neutral';
  }
}

export const APPLICATIONS_PATH = '/applications';

/** The UI path of one application (tab: tree, diff, history, conditions, resources). */
export function appPath(runtime: string, name: string, tab?: string): string {
  const p = `${APPLICATIONS_PATH}/${encodeURIComponent(runtime)}/${encodeURIComponent(name)}`;
  return tab ? `${p}?tab=${encodeURIComponent(tab)}` : p;
}

/** "Deployment/web", with the group and namespace when asked (apps/Deployment/prod/web). */
export function resourceLabel(k: ResourceKey, full = false): string {
  if (!full) return `${k.kind}/${k.name}`;
  return [k.group ? `${k.group}/${k.kind}` : k.kind, k.namespace, k.name].filter(Boolean).join('/');
}

/** A stable key for a resource: GROUP/KIND/NAMESPACE/NAME, as the sync call takes it. */
export function resourceId(k: ResourceKey): string {
  return `${k.group ?? ''}/${k.kind}/${k.namespace ?? ''}/${k.name}`;
}

/**
 * Go's field names for a SourceLocation, which the UI was written to read too. Runtimes send
 * file and line (api/appproxyv1.SourceLocation); these are still read, but no runtime sends them.
 */
interface LegacyLocation {
  File?: string;
  Line?: number;
}

/** "web/deploy.yaml:12", "chart/values.yaml", or "" when the place is not known. */
export function locationLabel(loc: (SourceLocation & LegacyLocation) | undefined): string {
  const file = loc?.File ?? loc?.file ?? '';
  const line = loc?.Line ?? loc?.line ?? 0;
  if (!file) return '';
  return line > 0 ? `${file}:${line}` : file;
}

/** The first line of a commit message. */
export function subject(message: string | undefined): string {
  return (message ?? '').split('\n', 1)[0].trim();
}

/** The address of the Kubernetes API from inside the cluster: Argo CD's "in-cluster". */
export const IN_CLUSTER_SERVER = 'https://kubernetes.default.svc';

/**
 * The cluster an application deploys to, by the name its runtime knows it by: the
 * destination's name, "in-cluster" for the in-cluster address, the runtime cluster with that
 * server, or the server URL itself.
 */
export function clusterName(dest: Destination, clusters: { name: string; server: string }[] = []): string {
  if (dest.name) return dest.name;
  const server = (dest.server ?? '').replace(/\/+$/, '');
  if (!server) return '';
  if (server === IN_CLUSTER_SERVER) return 'in-cluster';
  return clusters.find((c) => c.server.replace(/\/+$/, '') === server)?.name ?? server;
}

/** "in-cluster / web" style destination. */
export function destinationLabel(dest: Destination, clusters?: { name: string; server: string }[]): string {
  const c = clusterName(dest, clusters);
  return [c, dest.namespace].filter(Boolean).join(' / ') || '—';
}

/** A list row from an app-proxy answer (the fallback when GraphQL has no applications). */
export function summaryFromProxy(runtime: string, a: ProxyApplication): AppSummary {
  const spec = a.spec?.spec;
  const src = spec?.source ?? spec?.sources?.[0];
  const auto = spec?.syncPolicy?.automated;
  const st = a.status;
  return {
    id: `${runtime}/${a.name}`,
    runtime,
    name: a.name,
    project: st.project || spec?.project || 'default',
    labels: Object.entries(a.spec?.metadata.labels ?? {})
      .sort(([x], [y]) => x.localeCompare(y))
      .map(([key, value]) => ({ key, value })),
    repoUrl: src?.repoURL,
    path: src?.path ?? src?.chart,
    targetRevision: st.targetRevision ?? src?.targetRevision,
    destination: spec?.destination ?? {},
    autoSync: !!auto && auto.enabled !== false,
    autoSyncDisabled: !!st.autoSyncDisabled,
    syncStatus: st.sync || 'Unknown',
    healthStatus: st.health?.status || 'Unknown',
    healthMessage: st.health?.message,
    revision: st.revision,
    commit: st.commit ? { sha: st.commit.sha, author: st.commit.author, message: st.commit.message, time: st.commit.commitTime ?? st.commit.authorTime } : undefined,
    reconciledAt: isZeroTime(st.reconciledAt) ? undefined : st.reconciledAt,
    problem: problemText(st.conditions),
  };
}

/** Condition types that mean the application cannot be compared, synced or placed: a problem to fix, not a state to wait out. */
const PROBLEM_CONDITIONS = new Set(['ComparisonError', 'InvalidSpecError', 'NoClusterConfigured', 'SyncError']);

/** An application condition's weight: a problem (danger) or a warning (the rest, e.g. UnsupportedWarning, SelfHealPaused). */
export function conditionTone(type: string): 'danger' | 'warning' {
  return PROBLEM_CONDITIONS.has(type) ? 'danger' : 'warning';
}

/** The first problem as "Type: message", as GraphQL's `problem` gives it; undefined when there is none. */
export function problemText(conditions: readonly { type: string; message: string }[] | undefined): string | undefined {
  const p = problems(conditions)[0];
  return p && `${p.type}: ${p.message}`;
}

const PROBLEM_LABELS: Record<string, string> = {
  ComparisonError: 'Comparison error',
  InvalidSpecError: 'Invalid spec',
  NoClusterConfigured: 'No cluster',
  SyncError: 'Sync failed',
};

/** A problem condition in two words, for a badge (the type itself when it has none). */
export function problemLabel(type: string): string {
  return PROBLEM_LABELS[type] ?? type;
}

/** The problems among an application's conditions, in the order the runtime gave them. */
export function problems<T extends { type: string }>(conditions: readonly T[] | undefined): T[] {
  return (conditions ?? []).filter((c) => conditionTone(c.type) === 'danger');
}

/** Go's zero time ("0001-01-01T00:00:00Z") means "not yet". */
export function isZeroTime(iso: string | undefined): boolean {
  return !iso || iso.startsWith('0001-01-01');
}

/** Auto-sync in words: "on (prune, self-heal)", "off", "off: disabled by a rollback". */
export function autoSyncLabel(a: { autoSync: boolean; autoSyncDisabled: boolean; prune?: boolean; selfHeal?: boolean }): string {
  if (a.autoSync && a.autoSyncDisabled) return 'off: disabled by a rollback';
  if (!a.autoSync) return 'off';
  const extra = [a.prune && 'prune', a.selfHeal && 'self-heal'].filter(Boolean);
  return extra.length ? `on (${extra.join(', ')})` : 'on';
}

export interface AppCounts {
  total: number;
  health: Record<string, number>;
  sync: Record<string, number>;
}

function emptyCounts(): AppCounts {
  return {
    total: 0,
    health: { Healthy: 0, Progressing: 0, Degraded: 0, Suspended: 0, Missing: 0, Unknown: 0 },
    sync: { Synced: 0, OutOfSync: 0, Unknown: 0 },
  };
}

/** Adds n under status (none is Unknown); a status such as "constructor" is a key like any other. */
function add(m: Record<string, number>, status: string, n: number) {
  const k = status || 'Unknown';
  m[k] = (Object.hasOwn(m, k) ? m[k] : 0) + n;
}

/** How many applications have each health and sync status (known statuses always present). */
export function countApps(items: { healthStatus: string; syncStatus: string }[]): AppCounts {
  const c = emptyCounts();
  for (const a of items) {
    add(c.health, a.healthStatus, 1);
    add(c.sync, a.syncStatus, 1);
  }
  c.total = items.length;
  return c;
}

/** A status and how many applications have it, as GraphQL `applicationCounts` lists them. */
export interface StatusCount {
  status: string;
  count: number;
}

/** GraphQL `applicationCounts` (counted by the server) as AppCounts, known statuses always present. */
export function countsFromServer(n: { total: number; health: StatusCount[]; sync: StatusCount[] }): AppCounts {
  const c = emptyCounts();
  for (const h of n.health) add(c.health, h.status, h.count);
  for (const s of n.sync) add(c.sync, s.status, s.count);
  c.total = n.total;
  return c;
}

/** The summary bar's counts: applications by health and by sync status. */
export interface AppFacets {
  health: Record<string, number>;
  sync: Record<string, number>;
}

/**
 * Facet counts of the applications a page holds (every match of the other filters): each
 * health status counted among those with the chosen sync status, each sync status among those
 * with the chosen health, so a count says how many rows choosing it shows.
 */
export function facetCounts(items: readonly { healthStatus: string; syncStatus: string }[], f: { health?: string; sync?: string }): AppFacets {
  const is = (v: string, want?: string) => !want || (v || 'Unknown') === want;
  return {
    health: countApps(items.filter((a) => is(a.syncStatus, f.sync))).health,
    sync: countApps(items.filter((a) => is(a.healthStatus, f.health))).sync,
  };
}
