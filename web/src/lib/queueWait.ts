// Why a queued build waits, as the UI can tell from what it reads: the account's queue (the
// control plane offers the oldest first), the runners and their labels, and the pipeline's
// concurrency limits against its running builds. The dispatcher decides; these are its reasons.
import type { Build, Pipeline, Runner } from '../api/types';

export interface QueueFacts {
  /** The account's queued builds (any order). */
  queued: readonly Pick<Build, 'id' | 'createdAt'>[];
  runners: readonly Pick<Runner, 'name' | 'labels' | 'connected'>[];
  pipeline?: Pick<Pipeline, 'config'>;
  /** The pipeline's running builds (running, pending approval or terminating). */
  running: readonly Pick<Build, 'branch'>[];
}

export interface QueueWait {
  /** 1-based place in the queue, oldest first; undefined when the list did not hold it. */
  position?: number;
  of: number;
  reasons: string[];
}

function labelText(l: Record<string, string>): string {
  return Object.entries(l)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
}

/** Whether a runner's labels hold every label wanted (as the dispatcher's labelsMatch). */
export function labelsMatch(runner: Record<string, string> | undefined, want: Record<string, string>): boolean {
  return Object.entries(want).every(([k, v]) => runner?.[k] === v);
}

export function queueWait(b: Pick<Build, 'id' | 'createdAt' | 'branch'>, f: QueueFacts): QueueWait {
  const order = [...f.queued].sort((x, y) => (x.createdAt === y.createdAt ? (x.id < y.id ? -1 : 1) : x.createdAt < y.createdAt ? -1 : 1));
  const i = order.findIndex((q) => q.id === b.id);
  const out: QueueWait = { position: i >= 0 ? i + 1 : undefined, of: order.length, reasons: [] };
  const want = f.pipeline?.config.runnerLabels ?? {};
  const connected = f.runners.filter((r) => r.connected);
  if (f.runners.length === 0) out.reasons.push('No runner is registered: register one in Settings → Runners.');
  else if (connected.length === 0) out.reasons.push(`None of the ${f.runners.length} registered runners is connected.`);
  else if (!connected.some((r) => labelsMatch(r.labels, want))) {
    const offline = f.runners.filter((r) => !r.connected && labelsMatch(r.labels, want)).map((r) => r.name);
    out.reasons.push(
      `No connected runner has the labels ${labelText(want)}` + (offline.length ? ` (${offline.join(', ')} ${offline.length === 1 ? 'has them but is' : 'have them but are'} not connected).` : '.'),
    );
  }
  const c = f.pipeline?.config.concurrency ?? 0;
  if (c > 0 && f.running.length >= c) out.reasons.push(`The pipeline's concurrency limit is reached: ${f.running.length} of ${c} running.`);
  const bc = f.pipeline?.config.branchConcurrency ?? 0;
  if (bc > 0 && b.branch) {
    const n = f.running.filter((r) => r.branch === b.branch).length;
    if (n >= bc) out.reasons.push(`The limit per branch is reached on ${b.branch}: ${n} of ${bc} running.`);
  }
  if (out.position !== undefined && out.position > 1) out.reasons.push(`${out.position - 1} build${out.position === 2 ? '' : 's'} queued before it are offered first.`);
  return out;
}
