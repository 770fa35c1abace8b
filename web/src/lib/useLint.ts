// Lints a spec as it is typed: POST /api/v1/pipelines/lint after a pause, the previous request
// cancelled, so the problems shown are always those of the text on screen (or marked stale).
import { useEffect, useRef, useState } from 'react';
import { pipelines } from '../api/ci';
import type { LintIssue } from './lint';

export const LINT_DELAY_MS = 350;

export interface LintState {
  issues: LintIssue[];
  /** The text the issues are about. */
  checked?: string;
  checking: boolean;
  error?: unknown;
}

export function useLint(spec: string, enabled = true): LintState {
  const [state, setState] = useState<LintState>({ issues: [], checking: false });
  const ctl = useRef<AbortController | null>(null);
  useEffect(() => {
    if (!enabled) return;
    if (!spec.trim()) {
      ctl.current?.abort();
      setState({ issues: [], checked: spec, checking: false });
      return;
    }
    setState((s) => ({ ...s, checking: true }));
    const t = setTimeout(() => {
      ctl.current?.abort();
      const c = new AbortController();
      ctl.current = c;
      pipelines.lint(spec, c.signal).then(
        (r) => !c.signal.aborted && setState({ issues: r.issues ?? [], checked: spec, checking: false }),
        (error) => !c.signal.aborted && setState((s) => ({ ...s, checking: false, error })),
      );
    }, LINT_DELAY_MS);
    return () => clearTimeout(t);
  }, [spec, enabled]);
  useEffect(() => () => ctl.current?.abort(), []);
  return state;
}
