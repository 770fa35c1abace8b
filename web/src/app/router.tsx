// A small router on the History API: the URL is the state of every view, so every view can be
// shared by its link. Routes are patterns like /applications/:name; see routes.tsx.
import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

const CHANGE = 'freshet:navigate';

export interface Location {
  pathname: string;
  search: string;
  state: unknown;
}

let cached: Location | undefined;
function snapshot(): Location {
  const { pathname, search } = window.location;
  const state = window.history.state;
  if (!cached || cached.pathname !== pathname || cached.search !== search || cached.state !== state) {
    cached = { pathname, search, state };
  }
  return cached;
}

function subscribe(cb: () => void): () => void {
  window.addEventListener('popstate', cb);
  window.addEventListener(CHANGE, cb);
  return () => {
    window.removeEventListener('popstate', cb);
    window.removeEventListener(CHANGE, cb);
  };
}

export function useLocation(): Location {
  return useSyncExternalStore(subscribe, snapshot, snapshot);
}

export interface NavigateOptions {
  replace?: boolean;
  state?: unknown;
}

export function navigate(to: string, opts: NavigateOptions = {}): void {
  const url = new URL(to, window.location.href);
  const target = url.pathname + url.search + url.hash;
  const current = window.location.pathname + window.location.search + window.location.hash;
  if (target === current && opts.state === undefined && !opts.replace) return;
  if (opts.replace) window.history.replaceState(opts.state ?? null, '', target);
  else window.history.pushState(opts.state ?? null, '', target);
  window.dispatchEvent(new Event(CHANGE));
  if (!opts.replace) window.scrollTo(0, 0);
}

/** Builds "path?query" from parameters, dropping empty ones. */
export function href(path: string, params: Record<string, string | undefined | null> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

export function useSearchParams(): URLSearchParams {
  const { search } = useLocation();
  return new URLSearchParams(search);
}

/** Matches a pattern (/users/:id, a trailing /* for the rest) against a path. */
export function matchPath(pattern: string, pathname: string): Record<string, string> | null {
  const clean = (s: string) => s.replace(/\/+$/, '') || '/';
  const p = clean(pattern).split('/');
  const u = clean(pathname).split('/');
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i] === '*') {
      params['*'] = u.slice(i).map(decodeURIComponent).join('/');
      return params;
    }
    if (i >= u.length) return null;
    if (p[i].startsWith(':')) {
      if (!u[i]) return null;
      try {
        params[p[i].slice(1)] = decodeURIComponent(u[i]);
      } catch {
        return null;
      }
    } else if (p[i] !== u[i]) return null;
  }
  return p.length === u.length ? params : null;
}

type LinkProps = AnchorHTMLAttributes<HTMLAnchorElement> & { to: string; replace?: boolean };

/** An <a> that navigates in the app on a plain click and behaves like a link otherwise. */
export function Link({ to, replace, onClick, ...rest }: LinkProps) {
  const handle = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    if (rest.target && rest.target !== '_self') return;
    e.preventDefault();
    navigate(to, { replace });
  };
  return <a href={to} onClick={handle} {...rest} />;
}
