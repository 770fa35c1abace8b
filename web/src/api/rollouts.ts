// Argo Rollouts of an application, through its runtime's app-proxy (docs/appproxy.md,
// "Rollouts"): the application-scoped paths, so that the account's rules on applications apply.
import { request } from './client';
import type { ProxyList } from './apps';

const seg = encodeURIComponent;

// ─── The app-proxy's types (api/appproxyv1), checked against its golden JSON by wire.test.ts ───

export interface Rollout {
  name: string;
  namespace: string;
  /** The application that defines it. */
  app: string;
  /** Healthy, Progressing, Paused or Degraded ('' before the controller saw it). */
  phase: string;
  /** canary or blueGreen. */
  strategy: string;
  /** The canary's current step index; null for blue-green. */
  step: number | null;
  stableRevision: number | null;
  canaryRevision: number | null;
}

export interface RolloutStep {
  index: number;
  type: string;
  value: string;
  /** Succeeded, Running, Pending or Aborted. */
  status: string;
}

export interface RolloutRevision {
  revision: number;
  podTemplateHash: string;
  /** stable, canary or old. */
  role: string;
  replicas: number;
  ready: number;
  images: string[];
  createdAt?: string;
}

export interface Measurement {
  phase: string;
  value: string;
  message: string;
  startedAt?: string;
  finishedAt?: string;
}

export interface AnalysisMetric {
  name: string;
  phase: string;
  message: string;
  count: number;
  successful: number;
  failed: number;
  inconclusive: number;
  error: number;
  measurements: Measurement[];
}

export interface AnalysisRun {
  name: string;
  phase: string;
  message: string;
  podTemplateHash: string;
  startedAt?: string;
  metrics: AnalysisMetric[];
}

export interface RolloutDetail extends Rollout {
  message: string;
  paused: boolean;
  aborted: boolean;
  /** The canary's share (percent); null for blue-green. */
  weight: number | null;
  replicas: number;
  ready: number;
  updated: number;
  available: number;
  steps: RolloutStep[];
  revisions: RolloutRevision[];
  analysisRuns: AnalysisRun[];
}

export interface RolloutPromoteRequest {
  full: boolean;
}

export interface RolloutUndoRequest {
  /** 0: the previous revision. */
  toRevision: number;
}

export type RolloutOperation = 'promote' | 'abort' | 'retry' | 'restart' | 'undo' | 'pause' | 'resume';

/** An application's Rollouts on one runtime. */
export const rolloutsApi = {
  base: (runtime: string, app: string) => `/runtimes/${seg(runtime)}/app-proxy/api/v1/applications/${seg(app)}/rollouts`,
  list: (runtime: string, app: string, signal?: AbortSignal) => request<ProxyList<Rollout>>(rolloutsApi.base(runtime, app), { signal }),
  get: (runtime: string, app: string, namespace: string, name: string, signal?: AbortSignal) =>
    request<RolloutDetail>(`${rolloutsApi.base(runtime, app)}/${seg(namespace)}/${seg(name)}`, { signal }),
  operate: (runtime: string, app: string, namespace: string, name: string, op: RolloutOperation, body: RolloutPromoteRequest | RolloutUndoRequest | Record<string, never> = {}) =>
    request<RolloutDetail>(`${rolloutsApi.base(runtime, app)}/${seg(namespace)}/${seg(name)}/${op}`, { method: 'POST', body }),
};
