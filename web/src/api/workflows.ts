// Delivery Pipelines: a runtime's Argo Workflows, WorkflowTemplates, Sensors and EventSources on
// its app-proxy (docs/appproxy.md; the types are api/appproxyv1's, checked against its golden
// JSON by wire.test.ts), reached through the control plane at /runtimes/{runtime}/app-proxy/…,
// and the finished workflows the control plane archives (GET /api/v1/archived-workflows).
// Loaded with the Delivery Pipelines pages, not on first load.
import type { ProxyList } from './apps';
import { request } from './client';
import type { Page } from './types';

const seg = encodeURIComponent;
const proxy = (runtime: string) => `/runtimes/${seg(runtime)}/app-proxy/api/v1`;

export interface WorkflowParameter {
  name: string;
  value: string;
}

/** A Workflow as the app-proxy lists it. */
export interface Workflow {
  name: string;
  namespace: string;
  uid: string;
  /** Pending, Running, Succeeded, Failed or Error. */
  phase: string;
  message: string;
  startedAt: string | null;
  finishedAt: string | null;
  progress: string;
  template: string;
  suspended: boolean;
  shutdown: string;
  creator: string;
  resubmittedFrom: string;
  /** The Sensor that submitted it: the Delivery Pipeline it is a run of. */
  sensor: string;
  /** The CronWorkflow that created it: the CronWorkflow it is a run of. */
  cronWorkflow: string;
  createdAt: string;
}

/** An input or output artifact of a node and where it is (no credentials). */
export interface WorkflowArtifact {
  name: string;
  path: string;
  /** s3, git, http, raw, or '' when there is none. */
  location: string;
  endpoint: string;
  bucket: string;
  key: string;
  url: string;
  revision: string;
  deleted: boolean;
}

/** One node of a Workflow (Argo's NodeStatus). */
export interface WorkflowNode {
  id: string;
  name: string;
  displayName: string;
  /** Pod, Steps, StepGroup, DAG, TaskGroup, Retry, Skipped or Suspend. */
  type: string;
  templateName: string;
  phase: string;
  message: string;
  boundaryID: string;
  startedAt: string | null;
  finishedAt: string | null;
  children: string[] | null;
  podName: string;
  inputs: WorkflowParameter[] | null;
  outputs: WorkflowParameter[] | null;
  result: string | null;
  exitCode: string | null;
  inputArtifacts: WorkflowArtifact[] | null;
  outputArtifacts: WorkflowArtifact[] | null;
  /** A suspend node waiting to be resumed (an approval gate): the outputs a resume supplies. */
  supplied: WorkflowSuppliedParameter[] | null;
}

/** An output parameter a waiting suspend node takes when it is resumed (valueFrom.supplied). */
export interface WorkflowSuppliedParameter {
  name: string;
  /** valueFrom.default; null: a value is required. */
  default: string | null;
  /** The values it allows; empty or null: any. */
  enum: string[] | null;
  description: string;
}

/** The body of POST workflows/{namespace}/{name}/resume: an approval's answer. */
export interface WorkflowResumeRequest {
  /** A waiting suspend node's display name; none: every one. */
  node?: string;
  /** Values of the node's supplied output parameters, by name. */
  parameters?: Record<string, string>;
  /** The message the node keeps (default "Resumed"). */
  message?: string;
}

export interface WorkflowDetail extends Workflow {
  entrypoint: string;
  parameters: WorkflowParameter[] | null;
  nodes: WorkflowNode[] | null;
}

export interface WorkflowTemplateParameter {
  name: string;
  value: string | null;
  enum: string[] | null;
  description: string;
}

export interface WorkflowTemplate {
  name: string;
  namespace: string;
  kind: string;
  entrypoint: string;
  parameters: WorkflowTemplateParameter[] | null;
  templates: string[] | null;
  createdAt: string;
}

export interface EventCondition {
  type: string;
  status: string;
  reason: string;
  message: string;
}

export interface SensorDependency {
  name: string;
  eventSourceName: string;
  eventName: string;
}

export interface SensorTrigger {
  name: string;
  /** argoWorkflow, k8s, http, log or nats. */
  type: string;
  kind: string;
  workflowTemplate: string;
}

export interface Sensor {
  name: string;
  namespace: string;
  dependencies: SensorDependency[] | null;
  triggers: SensorTrigger[] | null;
  conditions: EventCondition[] | null;
  createdAt: string;
}

export interface EventSourceEvent {
  name: string;
  /** webhook, calendar, github, gitlab, gitea or bitbucket. */
  type: string;
  endpoint: string;
  schedule: string;
}

export interface EventSource {
  name: string;
  namespace: string;
  events: EventSourceEvent[] | null;
  conditions: EventCondition[] | null;
  createdAt: string;
}

export interface PipelineEvent {
  type: string;
  endpoint?: string;
  schedule?: string;
  interval?: string;
  owner?: string;
  repository?: string;
  events?: string[];
  secretName?: string;
  secretKey?: string;
}

/** The body of POST git-sources/{name}/delivery-pipelines. */
export interface DeliveryPipelineCommitRequest {
  name: string;
  event: PipelineEvent;
  workflowTemplate?: string;
  templateManifest?: string;
  parameters?: WorkflowParameter[];
  dir?: string;
  namespace?: string;
  message?: string;
}

export interface DeliveryPipelineCommit {
  name: string;
  gitSource: string;
  repoURL: string;
  branch: string;
  files: string[] | null;
  workflowTemplate: string;
  application: string;
  applicationCreated: boolean;
  commit: string;
  namespace: string;
}

/** A finished workflow the control plane keeps (GET /api/v1/archived-workflows). */
export interface ArchivedWorkflow {
  id: string;
  runtime: string;
  runtimeId: string;
  namespace: string;
  name: string;
  uid: string;
  phase: string;
  message: string;
  template: string;
  /** submit, resubmit, cron, sensor or cluster; triggeredBy who or what. */
  trigger: string;
  triggeredBy: string;
  progress: string;
  nodeCount: number;
  startedAt: string | null;
  finishedAt: string;
  durationSeconds: number;
  archivedAt: string;
  nodes?: ArchivedWorkflowNode[];
}

export interface ArchivedWorkflowNode {
  id: string;
  name: string;
  displayName: string;
  type: string;
  templateName: string;
  phase: string;
  message: string;
  startedAt: string | null;
  finishedAt: string | null;
  children: string[] | null;
}

/** A CronWorkflow (GET cron-workflows, GET cron-workflows/{namespace}/{name}). */
export interface CronWorkflow {
  name: string;
  namespace: string;
  uid: string;
  /** spec.schedule or spec.schedules, in timezone ('' is UTC). */
  schedules: string[] | null;
  timezone: string;
  concurrencyPolicy: string;
  startingDeadlineSeconds: number | null;
  suspended: boolean;
  stopExpression: string;
  /** spec.when: a run it holds false for is skipped. */
  when: string;
  /** Active, Stopped (by its stopStrategy), or '' before the controller has seen it. */
  phase: string;
  succeeded: number;
  failed: number;
  lastScheduledTime: string | null;
  nextScheduledTime: string | null;
  /** Its running Workflows' names. */
  active: string[] | null;
  conditions: CronWorkflowCondition[] | null;
  template: string;
  entrypoint: string;
  creator: string;
  createdAt: string;
}

export interface CronWorkflowCondition {
  /** SpecError or SubmissionError. */
  type: string;
  status: string;
  message: string;
}

/** The operations on a CronWorkflow (POST cron-workflows/{namespace}/{name}/{op}). */
export type CronWorkflowOp = 'suspend' | 'resume';

/** The operations on a Workflow (POST workflows/{namespace}/{name}/{op}). */
export type WorkflowOp = 'resubmit' | 'retry' | 'stop' | 'terminate' | 'suspend' | 'resume';

export const workflowsApi = {
  list: (runtime: string, signal?: AbortSignal) => request<ProxyList<Workflow>>(`${proxy(runtime)}/workflows`, { signal }),
  get: (runtime: string, ns: string, name: string, signal?: AbortSignal) =>
    request<WorkflowDetail>(`${proxy(runtime)}/workflows/${seg(ns)}/${seg(name)}`, { signal }),
  op: (runtime: string, ns: string, name: string, op: WorkflowOp) =>
    request<WorkflowDetail>(`${proxy(runtime)}/workflows/${seg(ns)}/${seg(name)}/${op}`, { method: 'POST', body: {} }),
  /** Resumes with an approval's answer (a 400 names the node or parameters.NAME it refuses). */
  resume: (runtime: string, ns: string, name: string, body: WorkflowResumeRequest) =>
    request<WorkflowDetail>(`${proxy(runtime)}/workflows/${seg(ns)}/${seg(name)}/resume`, { method: 'POST', body }),
  /** The URL of a node's log (text/plain; follow streams it while the node runs). */
  logURL: (runtime: string, ns: string, name: string, node: string, follow: boolean) =>
    `${proxy(runtime)}/workflows/${seg(ns)}/${seg(name)}/log?node=${seg(node)}${follow ? '&follow=true' : ''}`,
  cronWorkflows: (runtime: string, signal?: AbortSignal) => request<ProxyList<CronWorkflow>>(`${proxy(runtime)}/cron-workflows`, { signal }),
  cronWorkflow: (runtime: string, ns: string, name: string, signal?: AbortSignal) =>
    request<CronWorkflow>(`${proxy(runtime)}/cron-workflows/${seg(ns)}/${seg(name)}`, { signal }),
  cronOp: (runtime: string, ns: string, name: string, op: CronWorkflowOp) =>
    request<CronWorkflow>(`${proxy(runtime)}/cron-workflows/${seg(ns)}/${seg(name)}/${op}`, { method: 'POST', body: {} }),
  templates: (runtime: string, signal?: AbortSignal) => request<ProxyList<WorkflowTemplate>>(`${proxy(runtime)}/workflow-templates`, { signal }),
  sensors: (runtime: string, signal?: AbortSignal) => request<ProxyList<Sensor>>(`${proxy(runtime)}/sensors`, { signal }),
  eventSources: (runtime: string, signal?: AbortSignal) => request<ProxyList<EventSource>>(`${proxy(runtime)}/event-sources`, { signal }),
  commitPipeline: (runtime: string, gitSource: string, body: DeliveryPipelineCommitRequest) =>
    request<DeliveryPipelineCommit>(`${proxy(runtime)}/git-sources/${seg(gitSource)}/delivery-pipelines`, { method: 'POST', body }),
  archived: (q: { runtime?: string; namespace?: string; name?: string; phase?: string; limit?: number }, signal?: AbortSignal) =>
    request<Page<ArchivedWorkflow>>('/api/v1/archived-workflows', { query: q, signal }),
  archivedOne: (id: string, signal?: AbortSignal) => request<ArchivedWorkflow>(`/api/v1/archived-workflows/${seg(id)}`, { signal }),
};

// The workflow archive's statistics (GET /api/v1/archived-workflows/stats): the runs the
// runtimes reported finished, per day. Loaded with Home's workflow chart.
/** One UTC day's finished workflows by phase. */
export interface WorkflowRunDay {
  /** YYYY-MM-DD */
  date: string;
  succeeded: number;
  failed: number;
  error: number;
}

/** Finished workflows per day over a window, every day present, oldest first. */
export interface WorkflowRunStats {
  since: string;
  until: string;
  days: WorkflowRunDay[] | null;
}

export const workflowRunStats = (days: number, signal?: AbortSignal) =>
  request<WorkflowRunStats>('/api/v1/archived-workflows/stats', { query: { days }, signal });
