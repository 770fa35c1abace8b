// A button that opens a small menu: arrow keys move, Escape closes and returns focus,
// a click outside closes.
import { useEffect, useId, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';

export interface MenuItem {
  key: string;
  label: ReactNode;
  onSelect: () => void;
  checked?: boolean;
  disabled?: boolean;
  danger?: boolean;
}

export interface MenuProps {
  label: ReactNode;
  ariaLabel: string;
  items: MenuItem[];
  heading?: ReactNode;
  align?: 'left' | 'right';
  buttonClass?: string;
}

export function Menu({ label, ariaLabel, items, heading, align = 'right', buttonClass = 'menu-button' }: MenuProps) {
  const [open, setOpen] = useState(false);
  const root = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const id = useId();

  useEffect(() => {
    if (!open) return;
    const onDown = (e: MouseEvent) => {
      if (root.current && !root.current.contains(e.target as Node)) setOpen(false);
    };
    document.addEventListener('mousedown', onDown);
    root.current?.querySelector<HTMLElement>('[role^="menuitem"]:not([disabled])')?.focus();
    return () => document.removeEventListener('mousedown', onDown);
  }, [open]);

  const onKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if (!open) return;
    const list = Array.from(root.current?.querySelectorAll<HTMLElement>('[role^="menuitem"]:not([disabled])') ?? []);
    const i = list.indexOf(document.activeElement as HTMLElement);
    if (e.key === 'Escape') {
      e.preventDefault();
      setOpen(false);
      button.current?.focus();
    } else if (e.key === 'ArrowDown') {
      e.preventDefault();
      list[(i + 1) % list.length]?.focus();
    } else if (e.key === 'ArrowUp') {
      e.preventDefault();
      list[(i - 1 + list.length) % list.length]?.focus();
    } else if (e.key === 'Home') {
      e.preventDefault();
      list[0]?.focus();
    } else if (e.key === 'End') {
      e.preventDefault();
      list[list.length - 1]?.focus();
    } else if (e.key === 'Tab') {
      setOpen(false);
    }
  };

  return (
    <div className="menu" ref={root} onKeyDown={onKey}>
      <button
        ref={button}
        type="button"
        className={buttonClass}
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? id : undefined}
        aria-label={ariaLabel}
        onClick={() => setOpen((o) => !o)}
      >
        {label}
      </button>
      {open && (
        <div className={`menu-popup menu-${align}`} role="menu" id={id} aria-label={ariaLabel}>
          {heading && <div className="menu-heading">{heading}</div>}
          {items.map((it) => (
            <button
              key={it.key}
              type="button"
              role={it.checked === undefined ? 'menuitem' : 'menuitemradio'}
              aria-checked={it.checked}
              className={it.danger ? 'menu-item menu-item-danger' : 'menu-item'}
              disabled={it.disabled}
              tabIndex={-1}
              onClick={() => {
                setOpen(false);
                button.current?.focus();
                it.onSelect();
              }}
            >
              <span className="menu-check" aria-hidden="true">
                {it.checked ? '✓' : ''}
              </span>
              {it.label}
            </button>
          ))}
        </div>
      )}
    </div>
  );
}
