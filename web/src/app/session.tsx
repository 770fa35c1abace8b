// Who is logged in. The session is the HttpOnly cookie set by login; the UI only learns the
// caller from GET /api/v1/me and forgets it on logout or on any 401.
import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { ApiError, setUnauthenticatedHandler } from '../api/client';
import { auth } from '../api/rest';
import type { Me } from '../api/types';

export type SessionState =
  | { status: 'loading' }
  | { status: 'anonymous'; reason?: string }
  | { status: 'error'; error: unknown }
  | { status: 'authenticated'; me: Me };

export interface Session {
  state: SessionState;
  login: (email: string, password: string) => Promise<Me>;
  logout: () => Promise<void>;
  switchAccount: (account: string) => Promise<Me>;
  refresh: () => void;
}

const Ctx = createContext<Session | null>(null);

export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });
  const [nonce, setNonce] = useState(0);

  useEffect(() => {
    const ctl = new AbortController();
    auth.me(ctl.signal).then(
      (me) => setState({ status: 'authenticated', me }),
      (error) => {
        if (ctl.signal.aborted) return;
        if (error instanceof ApiError && error.status === 401) setState({ status: 'anonymous' });
        else setState({ status: 'error', error });
      },
    );
    return () => ctl.abort();
  }, [nonce]);

  useEffect(() => {
    setUnauthenticatedHandler(() => setState({ status: 'anonymous', reason: 'Your session has ended. Log in again to continue.' }));
    return () => setUnauthenticatedHandler(undefined);
  }, []);

  const login = useCallback(async (email: string, password: string) => {
    const res = await auth.login(email, password);
    setState({ status: 'authenticated', me: res.me });
    return res.me;
  }, []);

  const logout = useCallback(async () => {
    try {
      await auth.logout();
    } finally {
      setState({ status: 'anonymous' });
    }
  }, []);

  const switchAccount = useCallback(async (account: string) => {
    const me = await auth.switchAccount(account);
    setState({ status: 'authenticated', me });
    return me;
  }, []);

  const refresh = useCallback(() => setNonce((n) => n + 1), []);
  const value = useMemo(() => ({ state, login, logout, switchAccount, refresh }), [state, login, logout, switchAccount, refresh]);
  return <Ctx.Provider value={value}>{children}</Ctx.Provider>;
}

export function useSession(): Session {
  const s = useContext(Ctx);
  if (!s) throw new Error('useSession outside SessionProvider');
  return s;
}

/** The logged-in caller; only for views rendered inside the authenticated shell. */
export function useMe(): Me {
  const { state } = useSession();
  if (state.status !== 'authenticated') throw new Error('useMe without a session');
  return state.me;
}
