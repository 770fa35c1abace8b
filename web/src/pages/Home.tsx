import { Suspense, lazy, type ReactNode } from 'react';
import { errorMessage } from '../api/client';
import { gql } from '../api/graphql';
import { recentBuilds, runtimes as runtimesApi } from '../api/rest';
import type { AuditEvent, Build, Page, Role, Runtime } from '../api/types';
import { runtimeStatuses } from '../api/types';
import { Link, href } from '../app/router';
import { useMe } from '../app/session';
import { isActive, statusIcon, statusLabel, statusTone } from '../lib/builds';
import { PageHeader } from '../components/PageHeader';
import { ActivityFeed } from '../components/ActivityFeed';
import { EmptyState, ErrorState } from '../components/States';
import { formatTime, relativeTime } from '../lib/format';
import { countLabel } from '../lib/pagination';
import { RUNTIMES_PATH, countByStatus, heartbeatLabel, runtimeBadge, runtimePath, troubled } from '../lib/runtimes';
import { useResource } from '../lib/useResource';
import type { HomeAppCounts } from '../lib/appList';

// One round trip for the whole page. Counts come from pages of up to 1,000 (shown as "1,000+"
// beyond); the audit parts are asked for by admins only, who alone may read the log.
const HOME_QUERY = `query Home($admin: Boolean!) {
  users(first: 1000) { nodes { id role } pageInfo { hasNextPage } }
  apiKeys(first: 1000) { nodes { id status } pageInfo { hasNextPage } }
  recent: auditEvents(first: 60) @include(if: $admin) { nodes { id time actor action resourceType resourceId result } }
  denied: auditEvents(first: 1000, filter: {result: "denied", since: "24h"}) @include(if: $admin) { nodes { id } pageInfo { hasNextPage } }
  failed: auditEvents(first: 1000, filter: {result: "failure", since: "24h"}) @include(if: $admin) { nodes { id } pageInfo { hasNextPage } }
}`;

interface Conn<T> {
  nodes: T[];
  pageInfo: { hasNextPage: boolean };
}

interface HomeData {
  apps?: HomeAppCounts | { error: unknown };
  builds?: Page<Build> | { error: unknown };
  runtimes?: { items: Runtime[] } | { error: unknown };
  users: Conn<{ id: string; role: Role }>;
  apiKeys: Conn<{ id: string; status: string }>;
  recent?: { nodes: AuditEvent[] };
  denied?: Conn<{ id: string }>;
  failed?: Conn<{ id: string }>;
}

// The charts load after the page (visx and the stats call are not part of Home's first load).
const BuildTrends = lazy(() => import('../components/BuildTrends'));
const DeliveryTrends = lazy(() => import('../components/DoraCharts'));
const WorkflowTrends = lazy(() => import('../components/WorkflowTrends'));

/** Builds the Home card counts from: the newest page (GraphQL has no builds yet). */
const RECENT_BUILDS = 100;

export function Home() {
  const me = useMe();
  const admin = me.role === 'admin';
  const { data, error, loading, reload } = useResource(
    (signal) =>
      Promise.all([
        gql<HomeData>(HOME_QUERY, { admin }, signal),
        // A failure here leaves the rest of Home working; the card says what went wrong.
        recentBuilds(RECENT_BUILDS, signal).catch((e: unknown) => (signal.aborted ? Promise.reject(e) : { error: e })),
        runtimesApi.list(signal).catch((e: unknown) => (signal.aborted ? Promise.reject(e) : { error: e })),
        // Loaded on demand: the application list code is not part of the first load.
        import('../lib/appList')
          .then((m) => m.loadAppCounts(signal))
          .catch((e: unknown) => (signal.aborted ? Promise.reject(e) : { error: e })),
      ]).then(([d, b, r, a]) => ({ ...d, builds: b, runtimes: r, apps: a })),
    [admin],
  );

  const byRole = (r: Role) => data?.users.nodes.filter((u) => u.role === r).length ?? 0;
  const activeKeys = data?.apiKeys.nodes.filter((k) => k.status === 'active').length ?? 0;
  const refused = (data?.denied?.nodes.length ?? 0) + (data?.failed?.nodes.length ?? 0);
  const refusedMore = !!(data?.denied?.pageInfo.hasNextPage || data?.failed?.pageInfo.hasNextPage);

  return (
    <div data-page="home" data-ready={data ? 'true' : undefined}>
      <PageHeader title="Home">
        Account <strong>{me.account.name}</strong> · you are {me.role === 'admin' ? 'an admin' : `a ${me.role}`} · created {formatTime(me.account.createdAt)}
      </PageHeader>

      {error !== undefined && !data ? (
        <ErrorState error={error} onRetry={reload} />
      ) : (
        <section className="cards" aria-label="At a glance" aria-busy={loading}>
          <StatCard title="Users" to="/users" value={data ? countLabel(data.users.nodes.length, data.users.pageInfo.hasNextPage) : undefined}>
            {data && `${byRole('admin')} admin · ${byRole('member')} member · ${byRole('viewer')} viewer`}
          </StatCard>
          <StatCard title="API keys" to="/api-keys" value={data ? countLabel(activeKeys, data.apiKeys.pageInfo.hasNextPage) : undefined} unit="active">
            {data && `${countLabel(data.apiKeys.nodes.length, data.apiKeys.pageInfo.hasNextPage)} in total${admin ? '' : ' (yours)'}`}
          </StatCard>
          {admin ? (
            <StatCard
              title="Refused requests"
              to={href('/audit', { result: 'denied', since: '24h' })}
              value={data ? countLabel(refused, refusedMore) : undefined}
              unit="last 24 h"
              tone={refused > 0 ? 'warning' : undefined}
            >
              {data && `${countLabel(data.denied?.nodes.length ?? 0, !!data.denied?.pageInfo.hasNextPage)} denied · ${countLabel(data.failed?.nodes.length ?? 0, !!data.failed?.pageInfo.hasNextPage)} failed`}
            </StatCard>
          ) : (
            <StatCard title="Your role" value={me.role}>
              Ask an admin of {me.account.name} for more access.
            </StatCard>
          )}
        </section>
      )}

      <h2 className="section-title">Delivery</h2>
      <section className="cards cards-3" aria-label="Delivery">
        <RuntimesCard runtimes={data?.runtimes} />
        <BuildsCard builds={data?.builds} />
        <ApplicationsCard apps={data?.apps} />
      </section>

      <div className="section-row">
        <h2 className="section-title">Build trends</h2>
        <Link to="/settings/runners" className="small">
          Runners →
        </Link>
      </div>
      <Suspense fallback={<div className="chart-placeholder skeleton-row" role="status" aria-label="Loading build trends" />}>
        <BuildTrends />
      </Suspense>

      <div className="section-row">
        <h2 className="section-title">Deployment trends</h2>
        <Link to="/dora" className="small">
          DORA metrics →
        </Link>
      </div>
      {data ? (
        <Suspense fallback={<div className="chart-placeholder skeleton-row" role="status" aria-label="Loading deployment trends" />}>
          <DeliveryTrends runtimes={data.runtimes && 'items' in data.runtimes ? data.runtimes.items : []} />
        </Suspense>
      ) : (
        <div className="chart-placeholder skeleton-row" role="status" aria-label="Loading deployment trends" />
      )}

      <div className="section-row">
        <h2 className="section-title">Delivery Pipelines runs</h2>
      </div>
      <Suspense fallback={<div className="chart-placeholder skeleton-row" role="status" aria-label="Loading Delivery Pipelines runs" />}>
        <WorkflowTrends />
      </Suspense>

      <div className="section-row">
        <h2 className="section-title">Recent activity</h2>
        {admin && (
          <Link to="/audit" className="small">
            Open the audit log →
          </Link>
        )}
      </div>
      {!admin ? (
        <EmptyState title="The audit log is for admins">Your role ({me.role}) cannot read this account's activity.</EmptyState>
      ) : error !== undefined && !data ? null : (
        // The error, if any, is the cards' above. Repeated machine events are one row each.
        <ActivityFeed events={data && (data.recent?.nodes ?? [])} loading={loading} rows={8} />
      )}
    </div>
  );
}

function StatCard({
  title,
  value,
  unit,
  to,
  tone,
  children,
}: {
  title: string;
  value?: string;
  unit?: string;
  to?: string;
  tone?: 'warning';
  children?: ReactNode;
}) {
  return (
    <div className={tone ? `card card-${tone}` : 'card'}>
      <div className="card-title">{to ? <Link to={to}>{title}</Link> : title}</div>
      <div className="card-value">
        {value ?? <span className="skeleton-text" aria-label="Loading" />}
        {value && unit && <span className="card-unit"> {unit}</span>}
      </div>
      <div className="muted small card-foot">{children ?? '\u00a0'}</div>
    </div>
  );
}

/** The health states worth a line on Home, worst first, with their filter. */
const APP_ATTENTION: { label: string; key: 'health' | 'sync'; value: string; tone: string }[] = [
  { label: 'Degraded', key: 'health', value: 'Degraded', tone: 'danger' },
  { label: 'Missing', key: 'health', value: 'Missing', tone: 'warning' },
  { label: 'OutOfSync', key: 'sync', value: 'OutOfSync', tone: 'warning' },
  // Unknown is not "fine": the runtime could not tell (a missing cluster, a comparison error).
  { label: 'health unknown', key: 'health', value: 'Unknown', tone: 'warning' },
  { label: 'sync unknown', key: 'sync', value: 'Unknown', tone: 'warning' },
  { label: 'Suspended', key: 'health', value: 'Suspended', tone: 'info' },
  { label: 'Progressing', key: 'health', value: 'Progressing', tone: 'info' },
];

/** Applications that need someone to look: every one that is not known to be healthy and synced. */
export function appsNeedingAttention(apps: Pick<HomeAppCounts, 'health' | 'sync'>): number {
  const n = (r: Record<string, number>, k: string) => r[k] ?? 0;
  return n(apps.health, 'Degraded') + n(apps.health, 'Missing') + n(apps.health, 'Unknown') + n(apps.sync, 'OutOfSync') + n(apps.sync, 'Unknown');
}

/** A count as Home shows it (the server counts every application: 12,000 healthy). */
const num = (n: number) => n.toLocaleString('en-US');

/** Applications by health and sync, each count a link to the filtered list. */
function ApplicationsCard({ apps }: { apps?: HomeAppCounts | { error: unknown } }) {
  if (apps && 'error' in apps) {
    return (
      <div className="card">
        <div className="card-title">
          <Link to="/applications">Applications</Link>
        </div>
        <div className="card-empty text-danger">Could not load applications</div>
        <p className="muted small">{errorMessage(apps.error)}</p>
      </div>
    );
  }
  const bad = apps ? appsNeedingAttention(apps) : 0;
  return (
    <div className={bad ? 'card card-warning' : 'card'} data-testid="home-apps">
      <div className="card-title">
        <Link to="/applications">Applications</Link>
      </div>
      <div className="card-value">
        {apps ? countLabel(apps.total, apps.more) : <span className="skeleton-text" aria-label="Loading" />}
        {apps && <span className="card-unit"> {num(apps.health.Healthy)} healthy</span>}
      </div>
      <div className="muted small card-foot">
        {apps ? (
          <>
            <Link to={href('/applications', { sync: 'Synced' })} className="muted">
              {num(apps.sync.Synced)} synced
            </Link>{' '}
            ·{' '}
            <Link to={href('/applications', { sync: 'OutOfSync' })} className={apps.sync.OutOfSync ? 'text-warning' : 'muted'}>
              {num(apps.sync.OutOfSync)} out of sync
            </Link>
            {(apps.sync.Unknown ?? 0) > 0 && (
              <>
                {' '}
                ·{' '}
                <Link to={href('/applications', { sync: 'Unknown' })} className="text-warning">
                  {num(apps.sync.Unknown)} sync unknown
                </Link>
              </>
            )}
          </>
        ) : (
          '\u00a0'
        )}
      </div>
      <ul className="card-list" aria-label="Applications by health">
        {apps && apps.total === 0 && (
          <li className="muted small">
            No applications yet. <Link to="/applications">How to add one</Link>.
          </li>
        )}
        {apps && apps.total > 0 && apps.health.Healthy === apps.total && apps.sync.Synced === apps.total && <li className="muted small">All applications are synced and healthy.</li>}
        {apps &&
          APP_ATTENTION.filter((x) => ((x.key === 'health' ? apps.health[x.value] : apps.sync[x.value]) ?? 0) > 0).map((x) => (
            <li key={x.label} className="small">
              <span className={`card-list-icon text-${x.tone}`} aria-hidden="true">
                ●
              </span>
              <Link to={href('/applications', { [x.key]: x.value })} className="ellipsis">
                {num(x.key === 'health' ? apps.health[x.value] : apps.sync[x.value])} {x.label}
              </Link>
            </li>
          ))}
        {apps && apps.unreachable.length > 0 && (
          <li className="muted small" title={apps.unreachable.map((u) => `${u.runtime}: ${u.reason}`).join('\n')}>
            Not counted: {apps.unreachable.map((u) => u.runtime).join(', ')}
          </li>
        )}
        {!apps && [0, 1].map((i) => <li key={i} className="skeleton-line" />)}
      </ul>
    </div>
  );
}

/** Runtimes by status, and the ones that need attention. */
function RuntimesCard({ runtimes }: { runtimes?: { items: Runtime[] } | { error: unknown } }) {
  if (runtimes && 'error' in runtimes) {
    return (
      <div className="card">
        <div className="card-title">
          <Link to={RUNTIMES_PATH}>Runtimes</Link>
        </div>
        <div className="card-empty text-danger">Could not load runtimes</div>
        <p className="muted small">{errorMessage(runtimes.error)}</p>
      </div>
    );
  }
  const items = runtimes?.items ?? [];
  const counts = countByStatus(items);
  const bad = troubled(items);
  return (
    <div className={bad.length ? 'card card-warning' : 'card'} data-testid="home-runtimes">
      <div className="card-title">
        <Link to={RUNTIMES_PATH}>Runtimes</Link>
      </div>
      <div className="card-value">
        {runtimes ? items.length.toLocaleString('en-US') : <span className="skeleton-text" aria-label="Loading" />}
        {runtimes && <span className="card-unit"> {counts.healthy} healthy</span>}
      </div>
      <div className="muted small card-foot">
        {runtimes
          ? runtimeStatuses
              .filter((s) => s !== 'healthy')
              .map((s) => `${counts[s]} ${s}`)
              .join(' · ')
          : '\u00a0'}
      </div>
      <ul className="card-list" aria-label="Runtimes that need attention">
        {runtimes && items.length === 0 && (
          <li className="muted small">
            No runtimes yet. <Link to={RUNTIMES_PATH}>Add one</Link>.
          </li>
        )}
        {runtimes && items.length > 0 && bad.length === 0 && <li className="muted small">All runtimes are healthy or installing.</li>}
        {bad.slice(0, 3).map((r) => {
          const b = runtimeBadge(r.status);
          return (
            <li key={r.id} className="small">
              <span className={`card-list-icon text-${b.tone}`} title={b.label} aria-label={b.label}>
                {b.icon}
              </span>
              <Link to={runtimePath(r.name)} className="ellipsis">
                {r.name}
              </Link>
              <span className="muted nowrap">
                {b.label} · {heartbeatLabel(r.lastHeartbeat)}
              </span>
            </li>
          );
        })}
        {!runtimes && [0, 1].map((i) => <li key={i} className="skeleton-line" />)}
      </ul>
    </div>
  );
}

const DAY_MS = 24 * 3600 * 1000;

/** Builds of the last 24 hours (from the newest page), failures and what runs now, and the latest few. */
function BuildsCard({ builds }: { builds?: Page<Build> | { error: unknown } }) {
  if (builds && 'error' in builds) {
    return (
      <div className="card">
        <div className="card-title">
          <Link to="/builds">Builds</Link>
        </div>
        <div className="card-empty text-danger">Could not load builds</div>
        <p className="muted small">{errorMessage(builds.error)}</p>
      </div>
    );
  }
  const items = builds?.items ?? [];
  const since = Date.now() - DAY_MS;
  const day = items.filter((b) => Date.parse(b.createdAt) >= since);
  // The page may hold only part of the day: then the count is a lower bound.
  const more = !!builds?.nextCursor && day.length === items.length;
  const failed = day.filter((b) => b.status === 'failed').length;
  const active = items.filter((b) => isActive(b.status)).length;
  return (
    <div className={failed ? 'card card-warning' : 'card'} data-testid="home-builds">
      <div className="card-title">
        <Link to="/builds">Builds</Link>
      </div>
      <div className="card-value">
        {builds ? countLabel(day.length, more) : <span className="skeleton-text" aria-label="Loading" />}
        {builds && <span className="card-unit"> last 24 h</span>}
      </div>
      <div className="muted small card-foot">
        {builds ? (
          <>
            {more && `newest ${items.length}: `}
            <Link to={href('/builds', { status: 'failed' })} className={failed ? 'text-danger' : 'muted'}>
              {failed} failed
            </Link>{' '}
            · {active} running or waiting
          </>
        ) : (
          '\u00a0'
        )}
      </div>
      <ul className="card-list" aria-label="Latest builds">
        {builds && items.length === 0 && <li className="muted small">No builds yet. <Link to="/pipelines">Run a pipeline</Link>.</li>}
        {items.slice(0, 3).map((b) => (
          <li key={b.id} className="small">
            <span className={`card-list-icon text-${statusTone(b.status)}`} title={statusLabel(b.status)} aria-label={statusLabel(b.status)}>
              {statusIcon(b.status)}
            </span>
            <Link to={`/builds/${b.id}`} className="ellipsis">
              {b.name}
            </Link>
            <span className="muted nowrap">{relativeTime(b.createdAt)}</span>
          </li>
        ))}
        {!builds && [0, 1, 2].map((i) => <li key={i} className="skeleton-line" />)}
      </ul>
    </div>
  );
}
