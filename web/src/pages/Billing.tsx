// Settings → Plan and usage (docs/billing.md): the account's plan with each limit beside what the
// account uses of it, and its metered use per day (build minutes, builds, deployments, active
// users), downloadable as CSV. Read-only: the operator changes plans (`freshet plan set`).
import { useState } from 'react';
import { billing } from '../api/billing';
import type { PlanLimit, UsageDay } from '../api/types';
import { Badge } from '../components/Badge';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { DataTable } from '../components/ResourceTable';
import { SettingsNav } from '../components/SettingsNav';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { atLimit, resourceLabel, useShare, useText } from '../lib/billing';
import { formatTime } from '../lib/format';
import { useResource } from '../lib/useResource';

const WINDOWS = [
  { value: '7d', label: 'Last 7 days' },
  { value: '30d', label: 'Last 30 days' },
  { value: '90d', label: 'Last 90 days' },
  { value: '365d', label: 'Last 365 days' },
];

export default function BillingPage() {
  const plan = useResource((signal) => billing.plan(signal), []);
  const [since, setSince] = useState('30d');
  const usage = useResource((signal) => billing.usage(since, signal), [since]);
  const p = plan.data;
  const u = usage.data;

  return (
    <div data-page="billing">
      <PageHeader title="Settings" />
      <SettingsNav />
      <p className="muted">
        The account's plan sets how many users, runners, concurrent builds, build minutes, hosted runtimes, clusters and applications it may have. At a limit, the next one is refused
        (HTTP 402) and what is already running goes on. Plans are changed by whoever runs Freshet.
      </p>
      <section className="panel panel-wide" aria-labelledby="plan-title">
        {plan.error !== undefined && !p ? (
          <ErrorState error={plan.error} onRetry={plan.reload} />
        ) : !p ? (
          <LoadingRows rows={7} label="Loading the plan" />
        ) : (
          <>
            <h2 id="plan-title" data-testid="plan-name" data-plan={p.name}>
              {p.title || p.name} plan {p.default && <Badge tone="neutral">default</Badge>}
            </h2>
            {p.changedAt && <p className="muted small">Since {formatTime(p.changedAt)}</p>}
            <DataTable
              rows={p.limits ?? []}
              rowKey={(l) => l.resource}
              rowProps={(l) => ({ 'data-testid': `limit-${l.resource}`, 'data-at-limit': atLimit(l) })}
              columns={[
                { header: 'Resource', cellClassName: 'strong', cell: (l: PlanLimit) => resourceLabel(l.resource) },
                { header: 'Use', cell: (l: PlanLimit) => useText(l) },
                { header: <span className="visually-hidden">Share of the limit</span>, cell: (l: PlanLimit) => <LimitMeter limit={l} /> },
              ]}
            />
          </>
        )}
      </section>
      <section className="panel panel-wide" aria-labelledby="usage-title">
        <h2 id="usage-title">Usage</h2>
        <div className="filters">
          <Field label="Window">
            <select name="since" value={since} onChange={(e) => setSince(e.target.value)}>
              {WINDOWS.map((w) => (
                <option key={w.value} value={w.value}>
                  {w.label}
                </option>
              ))}
            </select>
          </Field>
          <div className="filters-buttons">
            <a className="button" href={billing.csvURL(since)} download data-testid="usage-csv">
              Download CSV
            </a>
          </div>
        </div>
        {usage.error !== undefined && !u ? (
          <ErrorState error={usage.error} onRetry={usage.reload} />
        ) : !u ? (
          <LoadingRows rows={4} label="Loading usage" />
        ) : (u.days ?? []).length === 0 ? (
          <EmptyState title="No use in this window">Builds, deployments and sign-ins show here by day.</EmptyState>
        ) : (
          <DataTable
            testId="usage-days"
            rows={[...(u.days ?? []), { ...u.totals, day: 'Total' }]}
            rowKey={(d) => d.day ?? 'total'}
            columns={[
              { header: 'Day (UTC)', cellClassName: 'strong nowrap', cell: (d: UsageDay) => d.day },
              { header: 'Build minutes', className: 'col-num', cell: (d: UsageDay) => d.buildMinutes.toLocaleString('en-US') },
              { header: 'Builds', className: 'col-num', cell: (d: UsageDay) => d.builds },
              { header: 'Deployments', className: 'col-num', cell: (d: UsageDay) => d.deployments },
              {
                header: 'Active users',
                className: 'col-num',
                cell: (d: UsageDay) => (d.day === 'Total' ? <span title="The busiest day's: the same users return day after day">{d.activeUsers}</span> : d.activeUsers),
              },
            ]}
          />
        )}
      </section>
    </div>
  );
}

/** A bar of the share of the limit used; nothing when the plan does not bound it here. */
function LimitMeter({ limit }: { limit: PlanLimit }) {
  const share = useShare(limit);
  if (share === undefined) return null;
  return (
    <span className="limit-meter" role="meter" aria-valuemin={0} aria-valuemax={100} aria-valuenow={share} aria-label={`${resourceLabel(limit.resource)}: ${share}% of the limit`}>
      <span className={atLimit(limit) ? 'limit-meter-fill at-limit' : 'limit-meter-fill'} style={{ width: `${share}%` }} />
    </span>
  );
}
