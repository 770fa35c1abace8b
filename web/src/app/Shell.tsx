import { useEffect, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import { errorMessage } from '../api/client';
import { invitations } from '../api/rest';
import { Menu } from '../components/Menu';
import { useResource } from '../lib/useResource';
import { Link, navigate, useLocation } from './router';
import { nav } from './routes';
import { useMe, useSession } from './session';
import { toggleTheme, useTheme } from './theme';

/** The frame around every page: navigation, account switcher, theme and user menu. */
export function Shell({ title, children }: { title: string; children: ReactNode }) {
  const me = useMe();
  const { logout, switchAccount } = useSession();
  const theme = useTheme();
  const { pathname } = useLocation();
  const [notice, setNotice] = useState<{ text: string; error?: boolean }>();
  // Below 1024 px the navigation is a drawer (a modal dialog) opened from the top bar.
  const [drawer, setDrawer] = useState(false);
  // Following a link in the drawer closes it.
  useEffect(() => setDrawer(false), [pathname]);
  // Invitations to other accounts, offered in the account menu; answered in Settings.
  const pending = useResource((signal) => invitations.list(signal), [me]);
  const invited = pending.data?.items.length ?? 0;

  useEffect(() => {
    document.title = `${title} · ${me.account.name} · Freshet`;
  }, [title, me.account.name]);

  useEffect(() => {
    if (!notice) return;
    const t = setTimeout(() => setNotice(undefined), 6000);
    return () => clearTimeout(t);
  }, [notice]);

  const doSwitch = async (id: string, name: string) => {
    if (id === me.account.id) return;
    try {
      await switchAccount(id);
    } catch (e) {
      setNotice({ text: `Could not switch to ${name}: ${errorMessage(e)}`, error: true });
    }
  };

  const doLogout = async () => {
    try {
      await logout();
    } finally {
      navigate('/login', { replace: true });
    }
  };

  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <aside className="sidebar">
        <Link to="/" className="brand" aria-label="Freshet home">
          <span className="brand-mark" aria-hidden="true" />
          <span>Freshet</span>
        </Link>
        <MainNav isAdmin={me.role === 'admin'} pathname={pathname} />
      </aside>
      <NavDrawer open={drawer} onClose={() => setDrawer(false)} isAdmin={me.role === 'admin'} pathname={pathname} />
      <div className="main-column">
        <header className="topbar">
          <button
            type="button"
            className="icon-button nav-toggle"
            aria-label="Open navigation"
            aria-haspopup="dialog"
            aria-expanded={drawer}
            aria-controls={drawerId}
            onClick={() => setDrawer(true)}
          >
            <span className="nav-toggle-bars" aria-hidden="true" />
          </button>
          <Menu
            ariaLabel={`Account: ${me.account.name}. Switch account`}
            align="left"
            buttonClass="menu-button account-button"
            label={
              <>
                <span className="muted small">Account</span> <strong data-testid="current-account">{me.account.name}</strong> <span aria-hidden="true">▾</span>
              </>
            }
            heading="Switch account"
            items={[
              ...me.accounts.map((a) => ({
                key: a.id,
                label: (
                  <span className="menu-account">
                    <span>{a.name}</span>
                    <span className="muted small">{a.role}</span>
                  </span>
                ),
                checked: a.id === me.account.id,
                onSelect: () => void doSwitch(a.id, a.name),
              })),
              ...(invited > 0
                ? [{ key: 'invitations', label: <span data-testid="pending-invitations">{invited === 1 ? '1 invitation to answer…' : `${invited} invitations to answer…`}</span>, onSelect: () => navigate('/settings') }]
                : []),
            ]}
          />
          <div className="topbar-right">
            <button
              type="button"
              className="icon-button theme-toggle"
              onClick={toggleTheme}
              aria-label={theme === 'dark' ? 'Switch to light theme' : 'Switch to dark theme'}
              title={theme === 'dark' ? 'Switch to light theme' : 'Switch to dark theme'}
            >
              {theme === 'dark' ? '☀' : '☾'}
            </button>
            <Menu
              ariaLabel={`User menu for ${me.user.email}`}
              label={
                <>
                  <span className="avatar" aria-hidden="true" data-initial={(me.user.name || me.user.email).slice(0, 1).toUpperCase()} />
                  <span className="user-email">{me.user.email}</span> <span aria-hidden="true">▾</span>
                </>
              }
              heading={
                <>
                  <div>{me.user.email}</div>
                  <div className="muted small">
                    {me.role} in {me.account.name}
                  </div>
                </>
              }
              items={[
                { key: 'keys', label: 'API keys', onSelect: () => navigate('/api-keys') },
                { key: 'settings', label: 'Settings', onSelect: () => navigate('/settings') },
                { key: 'theme', label: theme === 'dark' ? 'Light theme' : 'Dark theme', onSelect: toggleTheme },
                { key: 'logout', label: 'Log out', onSelect: () => void doLogout(), danger: true },
              ]}
            />
          </div>
        </header>
        {notice && (
          <div className={notice.error ? 'notice notice-error' : 'notice'} role={notice.error ? 'alert' : 'status'}>
            {notice.text}
            <button type="button" className="icon-button" aria-label="Dismiss" onClick={() => setNotice(undefined)}>
              ×
            </button>
          </div>
        )}
        <main id="main" className="content" tabIndex={-1}>
          {children}
        </main>
      </div>
    </div>
  );
}

const isActive = (to: string, pathname: string) => (to === '/' ? pathname === '/' : pathname === to || pathname.startsWith(to + '/'));

/** The main navigation, in the sidebar (1024 px and wider) and in the drawer. */
function MainNav({ isAdmin, pathname }: { isAdmin: boolean; pathname: string }) {
  return (
    <nav aria-label="Main">
      {nav.map((g, gi) => (
        <div className="nav-group" key={gi}>
          {g.heading && <div className="nav-heading">{g.heading}</div>}
          <ul>
            {g.items
              .filter((it) => !it.adminOnly || isAdmin)
              .map((it) => (
                <li key={it.to}>
                  <Link to={it.to} className={isActive(it.to, pathname) ? 'nav-link active' : 'nav-link'} aria-current={isActive(it.to, pathname) ? 'page' : undefined}>
                    {it.label}
                    {it.note && <span className="nav-note">{it.note}</span>}
                  </Link>
                </li>
              ))}
          </ul>
        </div>
      ))}
    </nav>
  );
}

const drawerId = 'nav-drawer';
const FOCUSABLE = 'a[href], button:not([disabled])';

/**
 * The navigation as a drawer: a native modal <dialog>, so the page behind is inert; Tab stays
 * inside, Escape or the close button or a click on the backdrop closes it, and focus returns to
 * the button that opened it. It is closed when the window grows past the drawer's breakpoint.
 */
function NavDrawer({ open, onClose, isAdmin, pathname }: { open: boolean; onClose: () => void; isAdmin: boolean; pathname: string }) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<Element | null>(null);
  const closeRef = useRef(onClose);
  closeRef.current = onClose;

  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      opener.current = document.activeElement;
      d.showModal();
      (d.querySelector<HTMLElement>('[aria-current="page"]') ?? d.querySelector<HTMLElement>(FOCUSABLE))?.focus();
    } else if (!open && d.open) {
      d.close();
      (opener.current as HTMLElement | null)?.focus?.();
    }
  }, [open]);

  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    const cancel = (e: Event) => {
      e.preventDefault();
      closeRef.current();
    };
    d.addEventListener('cancel', cancel);
    const wide = window.matchMedia?.('(min-width: 1024px)');
    const grew = () => wide?.matches && closeRef.current();
    wide?.addEventListener('change', grew);
    return () => {
      d.removeEventListener('cancel', cancel);
      wide?.removeEventListener('change', grew);
    };
  }, []);

  const trap = (e: KeyboardEvent<HTMLDialogElement>) => {
    if (e.key !== 'Tab' || !ref.current) return;
    const items = Array.from(ref.current.querySelectorAll<HTMLElement>(FOCUSABLE));
    if (items.length === 0) return;
    const first = items[0];
    const last = items[items.length - 1];
    if (e.shiftKey && document.activeElement === first) {
      e.preventDefault();
      last.focus();
    } else if (!e.shiftKey && document.activeElement === last) {
      e.preventDefault();
      first.focus();
    }
  };

  return (
    // A click on the backdrop lands on the dialog element itself.
    <dialog ref={ref} id={drawerId} className="drawer" aria-label="Navigation" onKeyDown={trap} onClick={(e) => e.target === e.currentTarget && onClose()}>
      {open && (
        <div className="drawer-inner">
          <div className="drawer-header">
            <Link to="/" className="brand" aria-label="Freshet home">
              <span className="brand-mark" aria-hidden="true" />
              <span>Freshet</span>
            </Link>
            <button type="button" className="icon-button" aria-label="Close navigation" onClick={onClose}>
              ×
            </button>
          </div>
          <MainNav isAdmin={isAdmin} pathname={pathname} />
        </div>
      )}
    </dialog>
  );
}
