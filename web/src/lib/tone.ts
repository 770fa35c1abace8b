// The colour of a status, as badges and status text show it: the CSS has `badge-<tone>` and
// `text-<tone>` for each tone. The components that draw them are in components/Badge.tsx.

export type Tone = 'neutral' | 'success' | 'warning' | 'danger' | 'info';

/** How a status is shown: its colour, a symbol (so colour is never the only sign) and its words. */
export interface BadgeLook {
  tone: Tone;
  icon: string;
  label: string;
}

const WORD_TONES: Record<string, Tone> = {
  success: 'success',
  active: 'success',
  denied: 'warning',
  expired: 'neutral',
  revoked: 'neutral',
  failure: 'danger',
  admin: 'info',
};

/** The tone of a status word the API returns (success, denied, active, revoked, admin, …); any other word is neutral. */
export function wordTone(word: string): Tone {
  return Object.hasOwn(WORD_TONES, word) ? WORD_TONES[word] : 'neutral';
}
