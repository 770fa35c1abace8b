// How runtimes are shown: status to badge, heartbeat age, counts for Home, the agent command.
import type { Runtime, RuntimeStatus } from '../api/types';
import { runtimeStatuses } from '../api/types';
import { relativeTime } from './format';
import type { BadgeLook, Tone } from './tone';

/** Runtimes heartbeat every 5 s: their pages look again as often. */
export const RUNTIME_POLL_MS = 5_000;

const tones: Record<RuntimeStatus, Tone> = {
  healthy: 'success',
  degraded: 'warning',
  disconnected: 'danger',
  installing: 'info',
};

const icons: Record<RuntimeStatus, string> = {
  healthy: '●',
  degraded: '◐',
  disconnected: '○',
  installing: '◌',
};

/** A runtime whose app-proxy can answer through the tunnel now (healthy or degraded): the pages
 *  that ask every runtime ask only these, and list the others as unreachable, not as failed loads. */
export function reachable(r: { status: string }): boolean {
  return r.status === 'healthy' || r.status === 'degraded';
}

/** The runtime a form asks first: the one chosen, else the first reachable, else the first. */
export function defaultRuntime<R extends { name: string; status: string }>(list: readonly R[], chosen: string): R | undefined {
  return list.find((r) => r.name === chosen) ?? list.find(reachable) ?? list[0];
}

/** Why a form does not ask this runtime through its tunnel, or undefined when it may. */
export function unreachableNote(r: { name: string; status: string } | undefined): string | undefined {
  return r && !reachable(r) ? `${r.name} is ${r.status}: it cannot be asked until it connects; choose a connected runtime.` : undefined;
}

/** The badge of a runtime status; an unknown status (a newer server) is neutral, shown as is. */
export function runtimeBadge(status: string): BadgeLook {
  const s = status as RuntimeStatus;
  if (!Object.hasOwn(tones, s)) return { tone: 'neutral', icon: '?', label: status || 'unknown' };
  return { tone: tones[s], icon: icons[s], label: s };
}

/** The tone of a component's or cluster's health word (healthy, degraded, …). */
export function healthTone(health: string | undefined): Tone {
  switch ((health ?? '').toLowerCase()) {
    case 'healthy':
    case 'ok':
      return 'success';
    case 'degraded':
    case 'progressing':
      return 'warning';
    case 'unhealthy':
    case 'failed':
    case 'missing':
      return 'danger';
    default:
      return 'neutral';
  }
}

/** "just now", "2 minutes ago", or "never" before the first heartbeat. */
export function heartbeatLabel(iso: string | undefined, now: number = Date.now()): string {
  return iso ? relativeTime(iso, now) : 'never';
}

/** How many runtimes have each status, in a fixed order, zeros included. */
export function countByStatus(items: Pick<Runtime, 'status'>[]): Record<RuntimeStatus, number> {
  const out = Object.fromEntries(runtimeStatuses.map((s) => [s, 0])) as Record<RuntimeStatus, number>;
  for (const r of items) if (Object.hasOwn(out, r.status)) out[r.status as RuntimeStatus]++;
  return out;
}

/** The runtimes that need attention (disconnected first, then degraded), by name. */
export function troubled<T extends Pick<Runtime, 'status' | 'name'>>(items: T[]): T[] {
  const rank = (s: string) => (s === 'disconnected' ? 0 : s === 'degraded' ? 1 : 2);
  return items.filter((r) => rank(r.status) < 2).sort((a, b) => rank(a.status) - rank(b.status) || a.name.localeCompare(b.name));
}

/** The command that runs a registered runtime's agent. */
export function runtimeCommand(server: string, token: string): string {
  return `freshet runtime --server ${server} --token ${token}`;
}

/**
 * Where the Runtimes pages live in the UI. Not /runtimes: the Go server's mux gives the whole
 * /runtimes/ subtree to the tunnel proxy (/runtimes/{runtime}/… reaches a runtime's app-proxy),
 * so a browser load of /runtimes or /runtimes/NAME would never reach the app.
 */
export const RUNTIMES_PATH = '/runtimes';

/** The UI path of one runtime's detail page. */
export function runtimePath(name: string): string {
  return `${RUNTIMES_PATH}/${encodeURIComponent(name)}`;
}
