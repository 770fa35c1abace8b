// Loads something for a view, with loading and error state, cancelled when the view changes.
import { useCallback, useEffect, useRef, useState } from 'react';

export interface Resource<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /**
   * Loads again, keeping the current data on screen while it does (no layout jump). A quiet
   * reload (polling) does not mark the view busy, and keeps showing the data if it fails.
   */
  reload: (opts?: { quiet?: boolean }) => void;
}

export function useResource<T>(load: (signal: AbortSignal) => Promise<T>, deps: readonly unknown[]): Resource<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [nonce, setNonce] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const quiet = useRef(false);
  useEffect(() => {
    const ctl = new AbortController();
    const isQuiet = quiet.current;
    quiet.current = false;
    if (!isQuiet) setState((s) => ({ data: s.data, error: undefined, loading: true }));
    loadRef.current(ctl.signal).then(
      (data) => !ctl.signal.aborted && setState({ data, loading: false }),
      (error) => !ctl.signal.aborted && setState((s) => (isQuiet && s.data !== undefined ? s : { data: s.data, error, loading: false })),
    );
    return () => ctl.abort();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, nonce]);
  const reload = useCallback((opts?: { quiet?: boolean }) => {
    quiet.current = !!opts?.quiet;
    setNonce((n) => n + 1);
  }, []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}
