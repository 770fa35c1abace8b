// Typed calls of the analytics API: deployment records, the DORA report (docs/analytics.md) and
// the Helm releases the runtimes read (docs/runtimes.md#helm-releases). Loaded with the pages
// that use them (DORA, Deployments, Helm, Home's deployment charts).
import { request } from './client';
import type { ImageCommit, ImageIssue } from './products';
import type { ListOptions, Page } from './types';

const v1 = '/api/v1';
const seg = encodeURIComponent;

export interface DeploymentCommit {
  author?: string;
  message?: string;
  time?: string;
}

export interface DeployedImage {
  registry?: string;
  repository: string;
  tags?: string[];
  digest: string;
  buildId?: string;
  commits: ImageCommit[] | null;
  issues: ImageIssue[] | null;
}

/** A commit a deployment shipped; sources: git (the runtime's walk of the range), image, or both. */
export interface DeployedCommit {
  sha: string;
  author?: string;
  message?: string;
  authorTime?: string;
  time?: string;
  issues: string[] | null;
  sources: string[] | null;
}

export interface DeploymentCommitRange {
  /** range, first, rollback or unchanged */
  kind: string;
  from?: string;
  truncated?: boolean;
}

export interface Deployment {
  id: string;
  runtime: string;
  runtimeId: string;
  application: string;
  project?: string;
  cluster?: string;
  namespace?: string;
  revision: string;
  syncId: number;
  /** auto-sync, manual or rollback */
  trigger: string;
  initiatedBy: string;
  user?: string;
  /** succeeded or failed */
  result: string;
  message?: string;
  commit?: DeploymentCommit;
  images: DeployedImage[] | null;
  commits: DeployedCommit[] | null;
  commitRange?: DeploymentCommitRange;
  startedAt?: string;
  finishedAt: string;
  durationSeconds: number;
  leadTimeSeconds?: number;
  degradedAt?: string;
  rolledBackAt?: string;
}

export interface DORAMetric {
  value: number;
  unit: string;
  /** elite, high, medium, low or none */
  band: string;
}

export interface DORABucket {
  start: string;
  deployments: number;
  successful: number;
  failures: number;
  leadTimeSeconds?: number;
  incidents: number;
  openIncidents: number;
  timeToRestoreSeconds?: number;
}

export interface DORAReport {
  since: string;
  until: string;
  bucket: string;
  failures: string[] | null;
  failureWindowSeconds: number;
  deploymentFrequency: DORAMetric;
  leadTimeForChanges: DORAMetric;
  changeFailureRate: DORAMetric;
  timeToRestore: DORAMetric;
  deployments: number;
  successful: number;
  failedChanges: number;
  incidents: number;
  openIncidents: number;
  series: DORABucket[] | null;
}

export interface HelmRevision {
  revision: number;
  status: string;
  chart: string;
  chartVersion: string;
  appVersion: string;
  updated: string | null;
  description: string;
}

export interface HelmRelease {
  id: string;
  runtime: string;
  runtimeId: string;
  cluster: string;
  namespace: string;
  name: string;
  chart: string;
  chartVersion: string;
  appVersion: string;
  status: string;
  revision: number;
  updated: string | null;
  description: string;
  reportedAt: string;
  history?: HelmRevision[];
}

/** What deployments and the DORA report are narrowed to (empty: everything). */
export interface AnalyticsFilter {
  app?: string;
  runtime?: string;
  cluster?: string;
  /** A product's name: its applications as a whole (the server resolves them). */
  product?: string;
  /** RFC 3339, a date, or a duration back from now (30d, 72h). */
  since?: string;
  until?: string;
}

export interface DORAQuery extends AnalyticsFilter {
  bucket?: 'day' | 'week' | 'month';
  failures?: string[];
}

function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

export const deployments = {
  list: (f: AnalyticsFilter, o: ListOptions = {}, signal?: AbortSignal) =>
    request<Page<Deployment>>(`${v1}/deployments${query({ ...f, limit: o.limit, after: o.after })}`, { signal }),
};

export function dora(q: DORAQuery, signal?: AbortSignal): Promise<DORAReport> {
  return request<DORAReport>(`${v1}/dora${query({ app: q.app, runtime: q.runtime, cluster: q.cluster, product: q.product, since: q.since, until: q.until, bucket: q.bucket, failures: q.failures?.join(',') })}`, { signal });
}

export interface HelmFilter {
  runtime?: string;
  cluster?: string;
  namespace?: string;
}

export const helmReleases = {
  list: (f: HelmFilter, signal?: AbortSignal) => request<{ items: HelmRelease[] }>(`${v1}/helm-releases${query({ ...f })}`, { signal }),
  get: (namespace: string, name: string, at: { runtime?: string; cluster?: string }, signal?: AbortSignal) =>
    request<HelmRelease>(`${v1}/helm-releases/${seg(namespace)}/${seg(name)}${query({ ...at })}`, { signal }),
};
