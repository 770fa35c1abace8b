// Delivery Pipelines as Codefresh shows them: a Sensor and the WorkflowTemplate its trigger
// submits, on one runtime, with its runs (the live Workflows whose sensor is it, and the
// archived ones the control plane keeps). Pure: the pages draw what this returns.
import type { ArchivedWorkflow, EventSource, Sensor, Workflow } from '../api/workflows';

export interface PipelineRun {
  name: string;
  namespace: string;
  phase: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** Whether it is still in the cluster (else only the control plane's archive has it). */
  live: boolean;
  archiveId?: string;
  message: string;
}

export interface DeliveryPipeline {
  runtime: string;
  name: string;
  namespace: string;
  /** The events it waits for, as "eventSource/event (type)". */
  triggers: string[];
  /** The WorkflowTemplate its trigger submits. */
  template: string;
  lastRun?: PipelineRun;
  /** Why it does not run, from its conditions (a False Deployed or Configured). */
  problem: string;
}

export function runsOf(sensor: { name: string; namespace: string }, live: Workflow[], archived: ArchivedWorkflow[], runtime: string): PipelineRun[] {
  const out: PipelineRun[] = live
    .filter((w) => w.sensor === sensor.name && w.namespace === sensor.namespace)
    .map((w) => ({ name: w.name, namespace: w.namespace, phase: w.phase, startedAt: w.startedAt ?? w.createdAt, finishedAt: w.finishedAt, live: true, message: w.message }));
  const seen = new Set(out.map((r) => r.name));
  for (const a of archived) {
    if (a.runtime !== runtime || a.trigger !== 'sensor' || a.triggeredBy !== sensor.name || a.namespace !== sensor.namespace || seen.has(a.name)) continue;
    out.push({ name: a.name, namespace: a.namespace, phase: a.phase, startedAt: a.startedAt, finishedAt: a.finishedAt, live: false, archiveId: a.id, message: a.message });
  }
  return out.sort((a, b) => (b.startedAt ?? '').localeCompare(a.startedAt ?? ''));
}

export function pipelinesOf(runtime: string, sensors: Sensor[], sources: EventSource[], live: Workflow[], archived: ArchivedWorkflow[]): DeliveryPipeline[] {
  return sensors.map((s) => {
    const triggers = (s.dependencies ?? []).map((d) => {
      const src = sources.find((e) => e.name === d.eventSourceName && e.namespace === s.namespace);
      const ev = src?.events?.find((e) => e.name === d.eventName);
      return `${d.eventSourceName}/${d.eventName}${ev ? ` (${ev.type})` : ''}`;
    });
    const template = (s.triggers ?? []).map((t) => t.workflowTemplate).find(Boolean) ?? '';
    const bad = (s.conditions ?? []).find((c) => c.status === 'False' && (c.type === 'Deployed' || c.type === 'Configured'));
    return { runtime, name: s.name, namespace: s.namespace, triggers, template, lastRun: runsOf(s, live, archived, runtime)[0], problem: bad?.message ?? '' };
  });
}

export const PHASES = ['Running', 'Pending', 'Succeeded', 'Failed', 'Error'] as const;
