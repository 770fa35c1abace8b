import { Suspense, useEffect } from 'react';
import { errorMessage } from '../api/client';
import { Login } from '../pages/Login';
import { NotFound } from '../pages/NotFound';
import { ResetPassword } from '../pages/ResetPassword';
import { LoadingRows } from '../components/States';
import { href, matchPath, navigate, useLocation } from './router';
import { routes } from './routes';
import { safeNext } from '../lib/urls';
import { SessionProvider, useSession } from './session';
import { Shell } from './Shell';

export function App() {
  return (
    <SessionProvider>
      <Root />
    </SessionProvider>
  );
}

function Root() {
  const { state, refresh } = useSession();
  const loc = useLocation();

  // Logged out on a page: go to /login?next=<that page>. Logged in on /login: go on.
  useEffect(() => {
    if (state.status === 'anonymous' && loc.pathname !== '/login' && loc.pathname !== '/reset-password') {
      navigate(href('/login', { next: loc.pathname === '/' && !loc.search ? undefined : loc.pathname + loc.search }), { replace: true });
    }
    if (state.status === 'authenticated' && loc.pathname === '/login') {
      navigate(safeNext(new URLSearchParams(loc.search).get('next')), { replace: true });
    }
  }, [state.status, loc.pathname, loc.search]);

  // A reset link works logged in or not (the reset ends every session of its user anyway).
  if (loc.pathname === '/reset-password') return <ResetPassword />;
  if (state.status === 'loading') return <Splash />;
  if (state.status === 'error') {
    return (
      <div className="splash" role="alert">
        <h1>Freshet</h1>
        <p>Cannot load your session: {errorMessage(state.error)}</p>
        <button className="button button-primary" onClick={refresh}>
          Try again
        </button>
      </div>
    );
  }
  if (state.status === 'anonymous') return <Login reason={state.reason} />;
  if (loc.pathname === '/login') return <Splash />;

  let page = <NotFound />;
  let title = 'Not found';
  for (const r of routes) {
    const params = matchPath(r.path, loc.pathname);
    if (params) {
      const C = r.component;
      page = <C params={params} />;
      title = r.title;
      break;
    }
  }
  return (
    // A new account is a new world: remount every page and drop what it had loaded.
    <Shell key={state.me.account.id} title={title}>
      <Suspense fallback={<LoadingRows rows={6} label="Loading page" />}>{page}</Suspense>
    </Shell>
  );
}

function Splash() {
  return (
    <div className="splash" aria-busy="true">
      <span className="brand-mark" aria-hidden="true" />
    </div>
  );
}
