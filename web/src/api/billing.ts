// The account's billing plan and metered usage (docs/billing.md): read-only, since plans are
// changed by the operator (`freshet plan set`), not through the API.
import { request } from './client';
import type { Plan, Usage } from './types';

const v1 = '/api/v1';

export const billing = {
  plan: (signal?: AbortSignal) => request<Plan>(`${v1}/plan`, { signal }),
  usage: (since: string, signal?: AbortSignal) => request<Usage>(`${v1}/usage`, { query: { since }, signal }),
  /** The usage CSV export, for a download link (the session cookie authenticates it). */
  csvURL: (since: string) => `${v1}/usage?since=${encodeURIComponent(since)}&format=csv`,
};
