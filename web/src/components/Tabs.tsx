import type { KeyboardEvent, ReactNode } from 'react';

export interface TabItem<T extends string> {
  id: T;
  label: ReactNode;
}

/**
 * A row of ARIA tabs: the selected one is in the tab order, arrows, Home and End move between
 * them. Panels use `id="panel-<id>"` and `aria-labelledby="tab-<id>"`. A tab in `dirty` gets a
 * dot saying it has unsaved changes.
 */
export function Tabs<T extends string>({ label, tab, onChange, tabs, dirty }: {
  label: string;
  tab: T;
  onChange: (t: T) => void;
  tabs: TabItem<T>[];
  dirty?: T[];
}) {
  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    const i = tabs.findIndex((t) => t.id === tab);
    let next = -1;
    if (e.key === 'ArrowRight') next = (i + 1) % tabs.length;
    else if (e.key === 'ArrowLeft') next = (i - 1 + tabs.length) % tabs.length;
    else if (e.key === 'Home') next = 0;
    else if (e.key === 'End') next = tabs.length - 1;
    if (next < 0) return;
    e.preventDefault();
    onChange(tabs[next].id);
    e.currentTarget.querySelectorAll<HTMLElement>('[role="tab"]')[next]?.focus();
  };
  return (
    <div className="tabs" role="tablist" aria-label={label} onKeyDown={onKey}>
      {tabs.map((t) => (
        <button
          key={t.id}
          type="button"
          role="tab"
          id={`tab-${t.id}`}
          aria-selected={tab === t.id}
          aria-controls={`panel-${t.id}`}
          tabIndex={tab === t.id ? 0 : -1}
          className={tab === t.id ? 'tab tab-active' : 'tab'}
          onClick={() => onChange(t.id)}
        >
          {t.label}
          {dirty?.includes(t.id) && (
            <span className="tab-dot" title="Unsaved changes">
              <span className="visually-hidden"> (unsaved)</span>
            </span>
          )}
        </button>
      ))}
    </div>
  );
}
