// The Applications list's filters as they live in the URL
// (?runtime=&cluster=&health=&sync=&project=&label=k=v&label=…&search=, and &view=tiles), as
// the GraphQL ApplicationFilter, and applied in the browser when the list comes from the
// app-proxies. Health and sync are the summary bar's facets: toggled there, and applied in the
// browser to what the page holds when it holds every application of the other filters.
import { healthStatuses, syncCodes, type AppSummary, type ApplicationFilter } from '../api/apps';
import { APPLICATIONS_PATH, clusterName } from './apps';

export interface AppFilter {
  runtime?: string;
  cluster?: string;
  health?: string;
  sync?: string;
  project?: string;
  /** "key=value" (or "key": the label is present, whatever its value). */
  labels: string[];
  search?: string;
}

const LABEL_KEY = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$/;

/** Why a label filter is not valid, or undefined. Kubernetes' rules for keys and values. */
export function labelError(s: string): string | undefined {
  const i = s.indexOf('=');
  const key = (i < 0 ? s : s.slice(0, i)).trim();
  const value = i < 0 ? '' : s.slice(i + 1).trim();
  if (!key) return `Label "${s}" has no key: write key=value, e.g. team=web.`;
  if (!LABEL_KEY.test(key)) return `Label key "${key}" is not valid: letters, digits, '-', '_' and '.', optionally after a DNS prefix and '/'.`;
  if (!LABEL_VALUE.test(value)) return `Label value "${value}" is not valid: up to 63 letters, digits, '-', '_' and '.'.`;
  return undefined;
}

/** "team=web, tier = api" → ["team=web", "tier=api"] (spaces around = dropped, empties skipped). */
export function splitLabels(text: string): string[] {
  return text
    .split(/[,\n]/)
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      const i = s.indexOf('=');
      return i < 0 ? s : `${s.slice(0, i).trim()}=${s.slice(i + 1).trim()}`;
    });
}

function one(p: URLSearchParams, k: string): string | undefined {
  return p.get(k)?.trim() || undefined;
}

/** Reads the filters from the URL; an unknown health or sync word is dropped. */
export function appFilterFromParams(p: URLSearchParams): AppFilter {
  const health = one(p, 'health');
  const sync = one(p, 'sync');
  const labels = [...new Set(p.getAll('label').flatMap(splitLabels))];
  return {
    runtime: one(p, 'runtime'),
    cluster: one(p, 'cluster'),
    health: health && (healthStatuses as readonly string[]).includes(health) ? health : undefined,
    sync: sync && (syncCodes as readonly string[]).includes(sync) ? sync : undefined,
    project: one(p, 'project'),
    labels,
    search: one(p, 'search'),
  };
}

/** The URL query of the filters ("" when none), labels repeated, in a fixed order. */
export function appFilterQuery(f: AppFilter): string {
  const q = new URLSearchParams();
  for (const k of ['runtime', 'cluster', 'health', 'sync', 'project'] as const) {
    const v = f[k]?.trim();
    if (v) q.set(k, v);
  }
  for (const l of f.labels) if (l.trim()) q.append('label', l.trim());
  if (f.search?.trim()) q.set('search', f.search.trim());
  const s = q.toString();
  return s ? `?${s}` : '';
}

export function isAppFiltered(f: AppFilter): boolean {
  return !!(f.runtime || f.cluster || f.health || f.sync || f.project || f.labels.length || f.search);
}

/** The GraphQL filter: only what is set. */
export function toGraphQLFilter(f: AppFilter): ApplicationFilter {
  const out: ApplicationFilter = {};
  if (f.runtime) out.runtime = f.runtime;
  if (f.cluster) out.cluster = f.cluster;
  if (f.health) out.health = f.health;
  if (f.sync) out.sync = f.sync;
  if (f.project) out.project = f.project;
  if (f.labels.length) out.labels = f.labels;
  if (f.search) out.search = f.search;
  return out;
}

/**
 * Does an application pass the filters? For lists read from the app-proxies, where the
 * browser filters. `clusters` are the runtime's, to name the destination's cluster; the
 * cluster filter matches that name or the server URL. Search looks in the name, project,
 * repository, path and namespace, case-insensitively.
 */
export function matchesAppFilter(a: AppSummary, f: AppFilter, clusters: { name: string; server: string }[] = []): boolean {
  if (f.runtime && a.runtime !== f.runtime) return false;
  if (f.cluster && clusterName(a.destination, clusters) !== f.cluster && (a.destination.server ?? '').replace(/\/+$/, '') !== f.cluster.replace(/\/+$/, '')) return false;
  if (f.health && a.healthStatus !== f.health) return false;
  if (f.sync && a.syncStatus !== f.sync) return false;
  if (f.project && a.project !== f.project) return false;
  for (const l of f.labels) {
    const i = l.indexOf('=');
    const key = i < 0 ? l : l.slice(0, i);
    const label = a.labels.find((x) => x.key === key);
    if (!label || (i >= 0 && label.value !== l.slice(i + 1))) return false;
  }
  if (f.search) {
    const s = f.search.toLowerCase();
    const hay = [a.name, a.project, a.repoUrl, a.path, a.destination.namespace].filter(Boolean).join('\n').toLowerCase();
    if (!hay.includes(s)) return false;
  }
  return true;
}

/** How the list is shown: a table of rows (the default) or tiles. */
export type AppView = 'table' | 'tiles';

/** ?view=tiles|table; table when absent or unknown. */
export function appViewFromParams(p: URLSearchParams): AppView {
  return p.get('view') === 'tiles' ? 'tiles' : 'table';
}

/** The list's URL: the filters, then view=tiles (table, the default, is not written). */
export function appListHref(f: AppFilter, view: AppView): string {
  const q = appFilterQuery(f);
  if (view === 'table') return APPLICATIONS_PATH + q;
  return APPLICATIONS_PATH + (q ? `${q}&view=tiles` : '?view=tiles');
}

export type Facet = 'health' | 'sync';

/** The filter with a facet's status chosen, or cleared when it was the chosen one. */
export function toggleFacet(f: AppFilter, facet: Facet, status: string): AppFilter {
  return { ...f, [facet]: f[facet] === status ? undefined : status };
}

/** The filter without its facets: what the page must hold to apply them itself. */
export function withoutFacets(f: AppFilter): AppFilter {
  return { ...f, health: undefined, sync: undefined };
}

/** Does an application have the chosen health and sync (any, when none is chosen)? */
export function matchesFacets(a: Pick<AppSummary, 'healthStatus' | 'syncStatus'>, f: Pick<AppFilter, Facet>): boolean {
  return (!f.health || (a.healthStatus || 'Unknown') === f.health) && (!f.sync || (a.syncStatus || 'Unknown') === f.sync);
}
