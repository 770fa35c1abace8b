// Reloads something quietly every few seconds while the browser tab is visible, and at once
// when it becomes visible again; a hidden tab asks for nothing.
import { useEffect } from 'react';

export function useVisiblePoll(reload: (o?: { quiet?: boolean }) => void, ms: number, enabled = true): void {
  useEffect(() => {
    if (!enabled) return;
    const tick = () => {
      if (!document.hidden) reload({ quiet: true });
    };
    const t = setInterval(tick, ms);
    document.addEventListener('visibilitychange', tick);
    return () => {
      clearInterval(t);
      document.removeEventListener('visibilitychange', tick);
    };
  }, [reload, ms, enabled]);
}
