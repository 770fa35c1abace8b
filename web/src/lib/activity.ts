// Home's recent activity, grouped so that people's actions are not buried: the events of a
// machine actor (the platform itself — triggers, runtimes, runners — or an API key, which
// automation uses) with the same action and result within a time window become one row that
// says how many and can be opened. A person's events are always rows of their own.
import type { AuditEvent } from '../api/types';

/** Events of one machine actor and action this close to the group's newest one join it. */
export const GROUP_WINDOW_MS = 30 * 60 * 1000;

export interface ActivityRow {
  /** Stable while the events stay: the newest event's ID. */
  key: string;
  /** Newest first; one event for a person's action or a lone machine event. */
  events: AuditEvent[];
}

/** Whether the actor is a machine: "system" (the platform), or a person's API key used by automation. */
export function isMachineActor(actor: string): boolean {
  return actor === 'system' || / \(api key [^)]*\)$/.test(actor);
}

/**
 * Groups events (any order; rows come newest first). A machine event joins the open group of
 * the same actor, action and result when it is within `windowMs` of that group's newest event,
 * even with other events between them; the group takes the place of its newest event.
 */
export function groupActivity(events: readonly AuditEvent[], windowMs = GROUP_WINDOW_MS): ActivityRow[] {
  const sorted = [...events].sort((a, b) => Date.parse(b.time) - Date.parse(a.time) || (a.id < b.id ? 1 : -1));
  const rows: ActivityRow[] = [];
  const open = new Map<string, { row: ActivityRow; newest: number }>();
  for (const e of sorted) {
    if (!isMachineActor(e.actor)) {
      rows.push({ key: e.id, events: [e] });
      continue;
    }
    const k = `${e.actor}\u0000${e.action}\u0000${e.result}`;
    const t = Date.parse(e.time);
    const g = open.get(k);
    if (g && g.newest - t <= windowMs) {
      g.row.events.push(e);
      continue;
    }
    const row = { key: e.id, events: [e] };
    rows.push(row);
    open.set(k, { row, newest: t });
  }
  return rows;
}
