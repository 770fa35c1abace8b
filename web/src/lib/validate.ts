// Client-side checks that mirror the server's (internal/identity), so a form can say what is
// wrong before a round trip. The server stays the authority: its field errors are shown too.

export type Errors<K extends string = string> = Partial<Record<K, string>>;

const NAME_RE = /^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$/;
export const MAX_NAME = 64;
export const MAX_DISPLAY_NAME = 100;
export const MIN_PASSWORD = 8;
export const MAX_PASSWORD = 256;
const MAX_EMAIL = 254;
// One local part, one @, a domain with a dot: what a person means by "an email address".
const EMAIL_RE = /^[^\s@<>()",;:]+@[^\s@<>()",;:]+\.[^\s@<>()",;:.]+$/;
// A Go time.ParseDuration string (72h, 1h30m, 90m) or 0.
const DURATION_RE = /^(0|(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+)$/;
const RFC3339_RE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

export function email(v: string): string | undefined {
  const s = v.trim();
  if (!s) return 'Email is required.';
  if (s.length > MAX_EMAIL || !EMAIL_RE.test(s)) return `"${s}" is not a valid email address (like name@example.com).`;
  return undefined;
}

/** A resource name: accounts and API keys. */
export function name(v: string, what = 'Name'): string | undefined {
  if (!v) return `${what} is required.`;
  if (v.length > MAX_NAME) return `${what} is longer than ${MAX_NAME} characters.`;
  if (!NAME_RE.test(v)) return `${what} may use letters, digits, spaces, '.', '_' or '-', starting with a letter or digit.`;
  return undefined;
}

export function displayName(v: string): string | undefined {
  return v.length > MAX_DISPLAY_NAME ? `Name is longer than ${MAX_DISPLAY_NAME} characters.` : undefined;
}

/** A password, optional when `optional` (the server then generates one). */
export function password(v: string, optional = false): string | undefined {
  if (!v) return optional ? undefined : 'Password is required.';
  if (v.length < MIN_PASSWORD || v.length > MAX_PASSWORD) return `Password must be ${MIN_PASSWORD} to ${MAX_PASSWORD} characters long.`;
  return undefined;
}

export function isDuration(v: string): boolean {
  return DURATION_RE.test(v.trim());
}

/** An API key lifetime: a Go duration like 720h, or 0 for never. */
export function expiresIn(v: string): string | undefined {
  if (!v.trim()) return 'Give a lifetime such as 720h, or 0 for a key that never expires.';
  if (!isDuration(v)) return `"${v}" is not a duration: use a form like 720h or 30m, or 0 for never.`;
  return undefined;
}

/** An audit time bound: RFC 3339 or a duration ago (24h). Empty means no bound. */
export function timeBound(v: string, what: string): string | undefined {
  const s = v.trim();
  if (!s) return undefined;
  if (s !== '0' && isDuration(s)) return undefined;
  if (RFC3339_RE.test(s) && !Number.isNaN(Date.parse(s))) return undefined;
  return `${what}: "${s}" is not a time: use RFC 3339 (2026-01-02T15:04:05Z) or a duration ago (24h).`;
}

export function hasErrors(e: Errors): boolean {
  return Object.values(e).some(Boolean);
}
