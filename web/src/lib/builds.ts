// Build and step states: which are still going, how they are coloured, how long they took.
import type { Tone } from './tone';

export const buildStatuses = ['queued', 'running', 'pending-approval', 'terminating', 'success', 'failed', 'terminated'] as const;
export type BuildStatus = (typeof buildStatuses)[number];

const ACTIVE = new Set(['queued', 'running', 'pending-approval', 'terminating']);

/** The build may still change: poll it, follow its log, offer cancel. */
export function isActive(status: string): boolean {
  return ACTIVE.has(status);
}

/** A build that can be restarted from its failed steps. */
export function canRestartFromFailed(status: string): boolean {
  return status === 'failed' || status === 'terminated';
}

const TONES: Record<string, Tone> = {
  success: 'success',
  approved: 'success',
  failed: 'danger',
  denied: 'danger',
  running: 'info',
  terminating: 'warning',
  'pending-approval': 'warning',
  queued: 'neutral',
  pending: 'neutral',
  skipped: 'neutral',
  terminated: 'neutral',
};

export function statusTone(status: string): Tone {
  return TONES[status] ?? 'neutral';
}

const ICONS: Record<string, string> = {
  success: '✓',
  approved: '✓',
  failed: '✕',
  denied: '✕',
  running: '●',
  terminating: '■',
  terminated: '■',
  'pending-approval': '❚❚',
  queued: '○',
  pending: '○',
  skipped: '↷',
  'not-run': '–',
};

/** A symbol for a build or step status, so colour is never the only sign. */
export function statusIcon(status: string): string {
  return ICONS[status] ?? '•';
}

/** Words for a status where the API's word is terse. */
export function statusLabel(status: string): string {
  return status === 'pending-approval' ? 'waiting for approval' : status === 'not-run' ? 'not run' : status;
}

/** Milliseconds from start to end (or to now while running); undefined before it starts. */
export function elapsed(start?: string, end?: string, now: number = Date.now()): number | undefined {
  if (!start) return undefined;
  const s = Date.parse(start);
  if (Number.isNaN(s)) return undefined;
  const e = end ? Date.parse(end) : now;
  return Number.isNaN(e) ? undefined : Math.max(0, e - s);
}

/** "850 ms", "4.2 s", "3 m 05 s", "1 h 02 m". */
export function formatDuration(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return '—';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 10_000) return `${(Math.floor(ms / 100) / 10).toFixed(1)} s`;
  const s = Math.floor(ms / 1000);
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${String(s % 60).padStart(2, '0')} s`;
  const h = Math.floor(m / 60);
  return `${h} h ${String(m % 60).padStart(2, '0')} m`;
}

export function shortSha(sha?: string): string {
  return sha ? sha.slice(0, 8) : '';
}

/** The log line where a step starts, as the runner writes it ("[freshet] step NAME (type) attempt 1/1"). */
export function stepStartPattern(name: string): (plainLine: string) => boolean {
  const prefix = `[freshet] step ${name} (`;
  return (l) => l.startsWith(prefix);
}
