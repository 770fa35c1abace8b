// Home's recent activity: a table of audit events where repeated machine events are one row
// ("×N") that opens to show each of them, so that people's actions stay in view.
import { useMemo, useState } from 'react';
import type { AuditEvent } from '../api/types';
import { groupActivity, type ActivityRow } from '../lib/activity';
import { StatusBadge } from './Badge';
import { ResourceTable, timeColumn } from './ResourceTable';

export interface ActivityFeedProps {
  /** The events, undefined while they load. */
  events?: AuditEvent[];
  loading?: boolean;
  /** Rows to show after grouping. */
  rows?: number;
  /** Groups open at first (for tests and links). */
  initiallyOpen?: string[];
}

interface Line {
  event: AuditEvent;
  /** The group this line heads (more than one event), or the group it is a member of. */
  group?: ActivityRow;
  member?: boolean;
}

export function ActivityFeed({ events, loading, rows = 8, initiallyOpen = [] }: ActivityFeedProps) {
  const [open, setOpen] = useState<ReadonlySet<string>>(() => new Set(initiallyOpen));
  const grouped = useMemo(() => (events ? groupActivity(events).slice(0, rows) : undefined), [events, rows]);
  const lines = useMemo(() => {
    if (!grouped) return undefined;
    const out: Line[] = [];
    for (const g of grouped) {
      if (g.events.length === 1) {
        out.push({ event: g.events[0] });
        continue;
      }
      out.push({ event: g.events[0], group: g });
      if (open.has(g.key)) for (const e of g.events) out.push({ event: e, group: g, member: true });
    }
    return out;
  }, [grouped, open]);
  const toggle = (key: string) =>
    setOpen((s) => {
      const next = new Set(s);
      if (!next.delete(key)) next.add(key);
      return next;
    });
  return (
    <ResourceTable
      list={{ data: lines && { items: lines }, error: undefined, loading: !!loading }}
      placeholder={{ label: 'Loading recent activity', rows: 8 }}
      empty={{ title: 'No activity yet', body: 'Logins and changes to users and API keys are recorded here.' }}
      rowKey={(l) => (l.member ? `${l.group!.key}/${l.event.id}` : l.event.id)}
      rowProps={(l) => ({ className: l.member ? 'activity-member' : undefined, 'data-testid': l.member ? undefined : l.group ? 'activity-group' : 'activity-row', 'data-count': l.group && !l.member ? l.group.events.length : undefined })}
      columns={[
        timeColumn('When', (l: Line) => l.event.time),
        { header: 'Who', cell: (l) => (l.member ? <span className="visually-hidden">{l.event.actor}</span> : l.event.actor) },
        {
          header: 'Action',
          cell: (l) => (
            <span className="activity-action">
              <code>{l.event.action}</code>
              {l.group && !l.member && (
                <button
                  type="button"
                  className="button button-small activity-count"
                  aria-expanded={open.has(l.group.key)}
                  onClick={() => toggle(l.group!.key)}
                  title={`${open.has(l.group.key) ? 'Hide' : 'Show'} the ${l.group.events.length} ${l.event.action} events`}
                >
                  ×{l.group.events.length}
                  <span className="visually-hidden"> {l.event.action} events: {open.has(l.group.key) ? 'hide them' : 'show them'}</span>
                </button>
              )}
            </span>
          ),
        },
        {
          header: 'Resource',
          cellClassName: 'muted',
          cell: (l) => (l.group && !l.member ? resources(l.group) : `${l.event.resourceType}${l.event.resourceId ? ` ${l.event.resourceId}` : ''}`),
        },
        { header: 'Result', cell: (l) => <StatusBadge value={l.event.result} /> },
      ]}
    />
  );
}

/** "build b-1" for one resource, "3 builds" for several. */
function resources(g: ActivityRow): string {
  const ids = new Set(g.events.map((e) => `${e.resourceType}\u0000${e.resourceId ?? ''}`));
  const e = g.events[0];
  if (ids.size === 1) return `${e.resourceType}${e.resourceId ? ` ${e.resourceId}` : ''}`;
  const types = new Set(g.events.map((x) => x.resourceType));
  return types.size === 1 ? `${ids.size} ${e.resourceType}s` : `${ids.size} resources`;
}
