// Typed calls of the CI API: projects, pipelines (+ lint, runs, triggers), builds, contexts and
// runners (api/openapi.yaml). The log stream is in logStream.ts.
import { request } from './client';
import type {
  Build,
  BuildStats,
  BuildFilter,
  ConfigContext,
  ContextRequest,
  ContextType,
  CreatedTrigger,
  ListOptions,
  Page,
  Pipeline,
  PipelineRequest,
  Project,
  ProjectRequest,
  RegisterRunnerRequest,
  RegisteredRunner,
  RegistryContext,
  RestartRequest,
  ApprovalRequest,
  RunRequest,
  Runner,
  Trigger,
  TriggerRequest,
} from './types';
import type { LintIssue } from '../lib/lint';

const v1 = '/api/v1';
const seg = encodeURIComponent;

export const projects = {
  list: (o: ListOptions = {}, signal?: AbortSignal) => request<Page<Project>>(`${v1}/projects`, { query: { limit: o.limit, after: o.after }, signal }),
  create: (name: string) => request<Project>(`${v1}/projects`, { method: 'POST', body: { name } satisfies ProjectRequest }),
  remove: (ref: string) => request<void>(`${v1}/projects/${seg(ref)}`, { method: 'DELETE' }),
};

export const pipelines = {
  list: (o: ListOptions & { project?: string } = {}, signal?: AbortSignal) =>
    request<Page<Pipeline>>(`${v1}/pipelines`, { query: { limit: o.limit, after: o.after, project: o.project }, signal }),
  /** ref: an ID or "project/name". */
  get: (ref: string, signal?: AbortSignal) => request<Pipeline>(`${v1}/pipelines/${seg(ref)}`, { signal }),
  create: (body: PipelineRequest) => request<Pipeline>(`${v1}/pipelines`, { method: 'POST', body }),
  update: (ref: string, body: PipelineRequest) => request<Pipeline>(`${v1}/pipelines/${seg(ref)}`, { method: 'PUT', body }),
  remove: (ref: string) => request<void>(`${v1}/pipelines/${seg(ref)}`, { method: 'DELETE' }),
  lint: (spec: string, signal?: AbortSignal) => request<{ valid: boolean; issues: LintIssue[] }>(`${v1}/pipelines/lint`, { method: 'POST', body: { spec }, signal }),
  run: (ref: string, body: RunRequest) => request<Build>(`${v1}/pipelines/${seg(ref)}/runs`, { method: 'POST', body }),
  triggers: (ref: string, signal?: AbortSignal) => request<{ items: Trigger[] }>(`${v1}/pipelines/${seg(ref)}/triggers`, { signal }),
  addTrigger: (ref: string, body: TriggerRequest) => request<CreatedTrigger>(`${v1}/pipelines/${seg(ref)}/triggers`, { method: 'POST', body }),
  removeTrigger: (id: string) => request<void>(`${v1}/triggers/${seg(id)}`, { method: 'DELETE' }),
};

export const builds = {
  list: (f: BuildFilter & ListOptions = {}, signal?: AbortSignal) =>
    request<Page<Build>>(`${v1}/builds`, { query: { limit: f.limit, after: f.after, pipeline: f.pipeline, status: f.status, branch: f.branch }, signal }),
  get: (id: string, signal?: AbortSignal) => request<Build>(`${v1}/builds/${seg(id)}`, { signal }),
  cancel: (id: string) => request<Build>(`${v1}/builds/${seg(id)}/cancel`, { method: 'POST' }),
  restart: (id: string, fromFailed = false) => request<Build>(`${v1}/builds/${seg(id)}/restart`, { method: 'POST', body: (fromFailed ? { fromFailed } : {}) satisfies RestartRequest }),
  approve: (id: string, comment = '') => request<Build>(`${v1}/builds/${seg(id)}/approve`, { method: 'POST', body: (comment ? { comment } : {}) satisfies ApprovalRequest }),
  deny: (id: string, comment = '') => request<Build>(`${v1}/builds/${seg(id)}/deny`, { method: 'POST', body: (comment ? { comment } : {}) satisfies ApprovalRequest }),
  /** The raw log (ANSI escapes included), for download. */
  logURL: (id: string) => `${v1}/builds/${seg(id)}/logs`,
  /** Builds per day over the last `days` days, counted by the server; by pipeline for sparklines. */
  stats: (f: { days?: number; pipeline?: string; byPipeline?: boolean }, signal?: AbortSignal) =>
    request<BuildStats>(`${v1}/builds/stats`, { query: { days: f.days, pipeline: f.pipeline, by: f.byPipeline ? 'pipeline' : undefined }, signal }),
};

export const contexts = {
  list: (signal?: AbortSignal) => request<{ items: ConfigContext[] }>(`${v1}/contexts`, { signal }),
  get: (name: string, decrypt = false, signal?: AbortSignal) => request<ConfigContext>(`${v1}/contexts/${seg(name)}`, { query: { decrypt: decrypt ? 'true' : undefined }, signal }),
  create: (name: string, type: ContextType, values: Record<string, string>) => request<ConfigContext>(`${v1}/contexts`, { method: 'POST', body: { name, type, values } satisfies ContextRequest }),
  createRegistry: (name: string, registry: RegistryContext) =>
    request<ConfigContext>(`${v1}/contexts`, { method: 'POST', body: { name, type: 'registry', registry } satisfies ContextRequest }),
  /** Replaces a registry context's registry; its masked password sent back keeps the stored one while the URL and CA stay. */
  updateRegistry: (name: string, registry: RegistryContext) => request<ConfigContext>(`${v1}/contexts/${seg(name)}`, { method: 'PUT', body: { registry } satisfies ContextRequest }),
  remove: (name: string) => request<void>(`${v1}/contexts/${seg(name)}`, { method: 'DELETE' }),
};

export const runners = {
  list: (signal?: AbortSignal) => request<{ items: Runner[] }>(`${v1}/runners`, { signal }),
  register: (name: string, labels: Record<string, string>) => request<RegisteredRunner>(`${v1}/runners`, { method: 'POST', body: { name, labels } satisfies RegisterRunnerRequest }),
  remove: (ref: string) => request<void>(`${v1}/runners/${seg(ref)}`, { method: 'DELETE' }),
};
