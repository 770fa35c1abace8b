// A short result in the corner (a sync's phase, a refresh, an error), gone after a few seconds
// or when dismissed. The live region is always there, so screen readers read each message.
import { useEffect, useRef } from 'react';
import type { Tone } from '../lib/tone';

export interface ToastMessage {
  text: string;
  tone: Exclude<Tone, 'neutral'>;
}

export function Toast({ message, onDone, ms = 8000 }: { message?: ToastMessage; onDone: () => void; ms?: number }) {
  const done = useRef(onDone);
  done.current = onDone;
  useEffect(() => {
    if (!message) return;
    const t = setTimeout(() => done.current(), message.tone === 'danger' ? ms * 2 : ms);
    return () => clearTimeout(t);
  }, [message, ms]);
  return (
    <div className="toast-region" role="status" aria-live="polite">
      {message && (
        <div className={`toast toast-${message.tone}`} data-testid="toast" data-tone={message.tone}>
          <span>{message.text}</span>
          <button type="button" className="icon-button" aria-label="Dismiss" onClick={() => done.current()}>
            ×
          </button>
        </div>
      )}
    </div>
  );
}
