// Where the Applications list and Home's counts come from: GraphQL `applications` (server
// filters and pages) and `applicationCounts` (counted by the server), or, on a server whose
// schema has no applications yet, each connected runtime's app-proxy, filtered here.
import { appProxy, isMissingApplicationsField, listApplications, listRuntimeRefs, type AppSummary, type RuntimeRef } from '../api/apps';
import { ApiError } from '../api/client';
import { gql } from '../api/graphql';
import { matchesAppFilter, matchesFacets, toGraphQLFilter, withoutFacets, type AppFilter } from './appFilters';
import { countApps, countsFromServer, summaryFromProxy, type AppCounts, type AppFacets, type StatusCount } from './apps';
import { reachable } from './runtimes';

export type AppSource = 'graphql' | 'app-proxy';

/** A runtime whose applications the list could not include, and why. */
export interface Unreachable {
  runtime: string;
  reason: string;
}

export interface AppListPage {
  items: AppSummary[];
  nextCursor?: string;
  source: AppSource;
  unreachable: Unreachable[];
  /**
   * From the app-proxies: every application matching the filter but its health and sync, so
   * that the page applies and counts those itself (items are these, filtered by them).
   */
  unfaceted?: AppSummary[];
}

// Learned once per page load: a server without the field stays without it.
let graphqlHasApps: boolean | undefined;
let graphqlHasCounts: boolean | undefined;

/** The server's schema has no `applicationCounts` (it is older than the field). */
function isMissingCountsField(err: unknown): boolean {
  return err instanceof ApiError && /Cannot query field "applicationCounts"|Unknown type "ApplicationCounts"/.test(err.message);
}

/** Every application of the account's connected runtimes, from their app-proxies. */
export async function listFromAppProxies(signal?: AbortSignal, only?: string): Promise<{ items: AppSummary[]; runtimes: RuntimeRef[]; unreachable: Unreachable[] }> {
  const runtimes = (await listRuntimeRefs(signal)).filter((r) => !only || r.name === only);
  const unreachable: Unreachable[] = [];
  const lists = await Promise.all(
    runtimes.map(async (r) => {
      if (!reachable(r)) {
        unreachable.push({ runtime: r.name, reason: r.status });
        return [];
      }
      try {
        const res = await appProxy.list(r.name, signal);
        return res.items.map((a) => summaryFromProxy(r.name, a));
      } catch (e) {
        if (signal?.aborted) throw e;
        unreachable.push({ runtime: r.name, reason: e instanceof Error ? e.message : String(e) });
        return [];
      }
    }),
  );
  unreachable.sort((x, y) => x.runtime.localeCompare(y.runtime));
  const items = lists.flat().sort((x, y) => x.name.localeCompare(y.name) || x.runtime.localeCompare(y.runtime));
  return { items, runtimes, unreachable };
}

/**
 * One page of applications matching the filter. From GraphQL a page holds up to `first`; from
 * the app-proxies the one page holds every match.
 */
export async function loadAppPage(f: AppFilter, first: number, after: string | undefined, signal?: AbortSignal): Promise<AppListPage> {
  if (graphqlHasApps !== false) {
    try {
      const page = await listApplications(toGraphQLFilter(f), first, after, signal);
      graphqlHasApps = true;
      return { ...page, source: 'graphql', unreachable: [] };
    } catch (e) {
      if (!isMissingApplicationsField(e)) throw e;
      graphqlHasApps = false;
    }
  }
  const { items, runtimes, unreachable } = await listFromAppProxies(signal, f.runtime);
  const clusters = new Map(runtimes.map((r) => [r.name, r.clusters]));
  const base = withoutFacets(f);
  const unfaceted = items.filter((a) => matchesAppFilter(a, base, clusters.get(a.runtime)));
  return { items: unfaceted.filter((a) => matchesFacets(a, f)), unfaceted, source: 'app-proxy', unreachable };
}

const FACETS_QUERY = `query AppFacets($h: ApplicationFilter, $s: ApplicationFilter) {
  byHealth: applicationCounts(filter: $h) { health { status count } }
  bySync: applicationCounts(filter: $s) { sync { status count } }
}`;
const FACETS_QUERY_ONE = `query AppFacets($f: ApplicationFilter) { applicationCounts(filter: $f) { health { status count } sync { status count } } }`;

/**
 * The summary bar's counts from the server (GraphQL `applicationCounts`): health counted with
 * every filter but health, sync with every filter but sync (one count when neither is chosen).
 * Undefined from a server without the field, or when the list comes from the app-proxies (the
 * page counts what it holds then).
 */
export async function loadAppFacets(f: AppFilter, signal?: AbortSignal): Promise<AppFacets | undefined> {
  if (graphqlHasApps === false || graphqlHasCounts === false) return undefined;
  try {
    let health: StatusCount[];
    let sync: StatusCount[];
    if (!f.health && !f.sync) {
      const d = await gql<{ applicationCounts: { health: StatusCount[]; sync: StatusCount[] } }>(FACETS_QUERY_ONE, { f: toGraphQLFilter(f) }, signal);
      ({ health, sync } = d.applicationCounts);
    } else {
      const d = await gql<{ byHealth: { health: StatusCount[] }; bySync: { sync: StatusCount[] } }>(
        FACETS_QUERY,
        { h: toGraphQLFilter({ ...f, health: undefined }), s: toGraphQLFilter({ ...f, sync: undefined }) },
        signal,
      );
      health = d.byHealth.health;
      sync = d.bySync.sync;
    }
    graphqlHasCounts = true;
    const c = countsFromServer({ total: 0, health, sync });
    return { health: c.health, sync: c.sync };
  } catch (e) {
    if (isMissingCountsField(e) || isMissingApplicationsField(e)) {
      graphqlHasCounts = false;
      return undefined;
    }
    throw e;
  }
}

/**
 * Home counts from at most this many applications (shown as "1,000+" beyond) on a server whose
 * GraphQL has `applications` but not `applicationCounts`.
 */
export const COUNT_LIMIT = 1000;

export interface HomeAppCounts extends AppCounts {
  more: boolean;
  source: AppSource;
  unreachable: Unreachable[];
}

const COUNTS_QUERY = `query HomeAppCounts { applicationCounts { total health { status count } sync { status count } } }`;

/**
 * Applications by health and sync, for Home: counted by the server (one small answer however
 * many there are); on an older server from the first COUNT_LIMIT applications; on a server
 * without applications in GraphQL from each connected runtime's app-proxy.
 */
export async function loadAppCounts(signal?: AbortSignal): Promise<HomeAppCounts> {
  if (graphqlHasApps !== false && graphqlHasCounts !== false) {
    try {
      const d = await gql<{ applicationCounts: { total: number; health: StatusCount[]; sync: StatusCount[] } }>(COUNTS_QUERY, undefined, signal);
      graphqlHasApps = graphqlHasCounts = true;
      return { ...countsFromServer(d.applicationCounts), more: false, source: 'graphql', unreachable: [] };
    } catch (e) {
      if (!isMissingCountsField(e)) throw e;
      graphqlHasCounts = false;
    }
  }
  if (graphqlHasApps !== false) {
    try {
      const d = await gql<{ applications: { nodes: { healthStatus: string; syncStatus: string }[]; pageInfo: { hasNextPage: boolean } } }>(
        `query HomeApps($first: Int) { applications(first: $first) { nodes { healthStatus syncStatus } pageInfo { hasNextPage } } }`,
        { first: COUNT_LIMIT },
        signal,
      );
      graphqlHasApps = true;
      return { ...countApps(d.applications.nodes), more: d.applications.pageInfo.hasNextPage, source: 'graphql', unreachable: [] };
    } catch (e) {
      if (!isMissingApplicationsField(e)) throw e;
      graphqlHasApps = false;
    }
  }
  const { items, unreachable } = await listFromAppProxies(signal);
  return { ...countApps(items), more: false, source: 'app-proxy', unreachable };
}
