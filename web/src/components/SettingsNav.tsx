import { Link, useLocation } from '../app/router';

const ITEMS = [
  { to: '/settings', label: 'General' },
  { to: '/settings/runners', label: 'Runners' },
  { to: '/settings/contexts', label: 'Contexts and secrets' },
  { to: '/settings/gitops-webhook', label: 'GitOps webhook' },
  { to: '/settings/git', label: 'Git integrations' },
  { to: '/settings/sso', label: 'Single sign-on' },
  { to: '/settings/teams', label: 'Teams' },
  { to: '/settings/rules', label: 'Rules' },
  { to: '/settings/billing', label: 'Plan and usage' },
];

/** The sections of Settings, each its own URL. */
export function SettingsNav() {
  const { pathname } = useLocation();
  return (
    <nav className="subnav" aria-label="Settings sections">
      {ITEMS.map((it) => (
        <Link key={it.to} to={it.to} className={pathname === it.to ? 'subnav-link active' : 'subnav-link'} aria-current={pathname === it.to ? 'page' : undefined}>
          {it.label}
        </Link>
      ))}
    </nav>
  );
}
