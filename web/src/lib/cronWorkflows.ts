// CronWorkflows (docs/webui.md "CronWorkflows"): a CronWorkflow's runs, live from the runtime
// (labelled with it) and archived by the control plane (trigger cron, triggeredBy its name), and
// how its schedule and state read.
import type { ArchivedWorkflow, CronWorkflow, Workflow } from '../api/workflows';
import type { PipelineRun } from './deliveryPipelines';

/** The runs of CronWorkflow cw on runtime: live first-hand, then the archive's, newest first, each once. */
export function cronRunsOf(cw: { name: string; namespace: string }, live: Workflow[], archived: ArchivedWorkflow[], runtime: string): PipelineRun[] {
  const out: PipelineRun[] = live
    .filter((w) => w.cronWorkflow === cw.name && w.namespace === cw.namespace)
    .map((w) => ({ name: w.name, namespace: w.namespace, phase: w.phase, startedAt: w.startedAt ?? w.createdAt, finishedAt: w.finishedAt, live: true, message: w.message }));
  const seen = new Set(out.map((r) => r.name));
  for (const a of archived) {
    if (a.runtime !== runtime || a.trigger !== 'cron' || a.triggeredBy !== cw.name || a.namespace !== cw.namespace || seen.has(a.name)) continue;
    out.push({ name: a.name, namespace: a.namespace, phase: a.phase, startedAt: a.startedAt, finishedAt: a.finishedAt, live: false, archiveId: a.id, message: a.message });
  }
  return out.sort((a, b) => (b.startedAt ?? '').localeCompare(a.startedAt ?? ''));
}

/** Its schedules as one line ("0 3 * * *, 0 15 * * *"). */
export function scheduleText(cw: Pick<CronWorkflow, 'schedules'>): string {
  return (cw.schedules ?? []).join(', ');
}

/** Its state in a word: Stopped (by its stopStrategy, for good), Suspended, Invalid (a SpecError), or Active. */
export function cronState(cw: Pick<CronWorkflow, 'phase' | 'suspended' | 'conditions'>): 'Stopped' | 'Suspended' | 'Invalid' | 'Active' {
  if (cw.phase === 'Stopped') return 'Stopped';
  if (cw.suspended) return 'Suspended';
  if ((cw.conditions ?? []).some((c) => c.type === 'SpecError' && c.status === 'True')) return 'Invalid';
  return 'Active';
}

/** The operation its page offers: suspend an active one, resume a suspended one; none for one its stopStrategy stopped. */
export function cronOpOf(cw: Pick<CronWorkflow, 'phase' | 'suspended'>): 'suspend' | 'resume' | undefined {
  if (cw.phase === 'Stopped') return undefined;
  return cw.suspended ? 'resume' : 'suspend';
}
