// The current time for views that show how long something has been running.
import { useEffect, useState } from 'react';

/**
 * The current time, ticking every second while `live` (for durations of running builds);
 * otherwise the time of the render.
 */
export function useNow(live: boolean, everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!live) return;
    setNow(Date.now());
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [live, everyMs]);
  return live ? now : Date.now();
}
