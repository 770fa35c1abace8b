// How the plan page shows a limit and its use.
import type { PlanLimit } from '../api/types';

const LABELS: Record<string, string> = {
  users: 'Users',
  runners: 'Runners',
  'concurrent-builds': 'Concurrent builds',
  'build-minutes': 'Build minutes',
  'hosted-runtimes': 'Hosted runtimes',
  'clusters-per-runtime': 'Clusters per runtime',
  applications: 'Applications',
};

/** The resource's name as the page shows it (an unknown one as the API names it). */
export function resourceLabel(resource: string): string {
  return LABELS[resource] ?? resource;
}

/** "3 of 5", "3 of unlimited", "up to 5 per runtime". */
export function useText(l: PlanLimit): string {
  const limit = l.limit < 0 ? 'unlimited' : l.limit.toLocaleString('en-US');
  if (l.used < 0) return l.limit < 0 ? 'unlimited' : `up to ${limit} per runtime`;
  const per = l.period ? ` this ${l.period}` : '';
  return `${l.used.toLocaleString('en-US')} of ${limit}${per}`;
}

/** The share of the limit used, 0–100 (undefined when unlimited or not counted here). */
export function useShare(l: PlanLimit): number | undefined {
  if (l.limit < 0 || l.used < 0) return undefined;
  if (l.limit === 0) return 100;
  return Math.min(100, Math.round((l.used / l.limit) * 100));
}

/** Whether the account is at (or, after a smaller plan, over) the limit: the next one is refused. */
export function atLimit(l: PlanLimit): boolean {
  return l.limit >= 0 && l.used >= 0 && l.used >= l.limit;
}
