// The Applications list's summary bar: how many applications have each health and each sync
// status, each count a toggle button (aria-pressed) that filters the list by it. Named by
// their text ("Healthy 3"), in groups named Health and Sync.
import { healthStatuses, syncCodes } from '../api/apps';
import type { Facet } from '../lib/appFilters';
import { healthBadge, syncBadge, type AppFacets } from '../lib/apps';

export interface AppFacetBarProps {
  /** Undefined while they load, or from a server that cannot count. */
  counts?: AppFacets;
  health?: string;
  sync?: string;
  onToggle: (facet: Facet, status: string) => void;
  busy?: boolean;
}

export function AppFacetBar({ counts, health, sync, onToggle, busy }: AppFacetBarProps) {
  return (
    <div className="facet-bar" data-testid="app-facets" aria-busy={busy || undefined}>
      <FacetGroup facet="health" title="Health" statuses={healthStatuses} chosen={health} counts={counts?.health} onToggle={onToggle} />
      <FacetGroup facet="sync" title="Sync" statuses={syncCodes} chosen={sync} counts={counts?.sync} onToggle={onToggle} />
    </div>
  );
}

function FacetGroup({
  facet,
  title,
  statuses,
  chosen,
  counts,
  onToggle,
}: {
  facet: Facet;
  title: string;
  statuses: readonly string[];
  chosen?: string;
  counts?: Record<string, number>;
  onToggle: (facet: Facet, status: string) => void;
}) {
  // A fieldset named by its legend: a group with a name, and no aria-label for a "Sync" label
  // query to find beside the Sync filter.
  return (
    <fieldset className="facet-group">
      <legend className="facet-title">{title}</legend>
      {statuses.map((s) => {
        const look = facet === 'health' ? healthBadge(s) : syncBadge(s);
        const n = counts?.[s];
        const pressed = chosen === s;
        return (
          <button
            key={s}
            type="button"
            className={`facet facet-${look.tone}${pressed ? ' facet-pressed' : ''}${n === 0 && !pressed ? ' facet-zero' : ''}`}
            aria-pressed={pressed}
            data-testid={`facet-${facet}-${s}`}
            data-count={n}
            title={pressed ? `Show every ${facet} status again` : `Show only ${s} applications`}
            onClick={() => onToggle(facet, s)}
          >
            <span aria-hidden="true">{look.icon}</span> {s}
            {n !== undefined && <span className="facet-count"> {n.toLocaleString('en-US')}</span>}
          </button>
        );
      })}
    </fieldset>
  );
}
