// The one way the UI talks to the server: same-origin fetch with the session cookie, the CSRF
// header on every request that changes state, and every failure turned into an ApiError with
// the server's {error:{code,message,field}} shape.

export type ErrorCode =
  | 'invalid_argument'
  | 'not_found'
  | 'conflict'
  | 'unauthenticated'
  | 'permission_denied'
  | 'rate_limited'
  | 'too_large'
  | 'unavailable'
  | 'internal'
  | 'network'
  | 'bad_response';

/** An error from the API, or from reaching it. `field` names the bad input when there is one. */
export class ApiError extends Error {
  readonly code: ErrorCode | string;
  readonly status: number;
  readonly field?: string;
  readonly requestId?: string;

  constructor(init: { code: string; message: string; status: number; field?: string; requestId?: string }) {
    super(init.message);
    this.name = 'ApiError';
    this.code = init.code;
    this.status = init.status;
    this.field = init.field;
    this.requestId = init.requestId;
  }

  /** The session is missing or over: the UI should ask to log in. */
  get unauthenticated(): boolean {
    return this.status === 401;
  }
}

export const CSRF_COOKIE = 'freshet_csrf';
export const CSRF_HEADER = 'X-CSRF-Token';

/** Reads a cookie that scripts may read (the CSRF token; the session cookie is HttpOnly). */
export function readCookie(name: string, cookies: string = typeof document === 'undefined' ? '' : document.cookie): string | undefined {
  for (const part of cookies.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === name) return decodeURIComponent(v.join('='));
  }
  return undefined;
}

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Called whenever the server says the session is gone (401), so the app can show login. */
let onUnauthenticated: ((err: ApiError) => void) | undefined;
export function setUnauthenticatedHandler(fn: ((err: ApiError) => void) | undefined): void {
  onUnauthenticated = fn;
}

/** For requests made without request() (the log stream): report a 401 like request() does. */
export function notifyUnauthenticated(err: ApiError): void {
  onUnauthenticated?.(err);
}

export interface RequestOptions {
  method?: string;
  /** Sent as JSON. */
  body?: unknown;
  /** Sent as is, with rawType as its Content-Type (a YAML manifest), instead of a JSON body. */
  raw?: string;
  rawType?: string;
  query?: Record<string, string | number | undefined | null>;
  signal?: AbortSignal;
  /** Do not report a 401 to the unauthenticated handler (login itself, the first /me). */
  quiet401?: boolean;
  /** Extra request headers (a git provider token for the app-proxy's repository list). */
  headers?: Record<string, string>;
}

export type Fetch = (input: string, init?: RequestInit) => Promise<Response>;
let fetchImpl: Fetch = (input, init) => fetch(input, init);
/** Tests replace fetch. */
export function setFetch(f: Fetch): void {
  fetchImpl = f;
}

export function buildQuery(query: RequestOptions['query']): string {
  if (!query) return '';
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v !== undefined && v !== null && v !== '') p.set(k, String(v));
  }
  const s = p.toString();
  return s ? '?' + s : '';
}

/** Turns a non-2xx response into an ApiError, whatever its body is. */
export async function errorFromResponse(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  const e = (body as { error?: { code?: unknown; message?: unknown; field?: unknown; requestId?: unknown } } | undefined)?.error;
  if (e && typeof e.message === 'string') {
    return new ApiError({
      code: typeof e.code === 'string' ? e.code : codeForStatus(res.status),
      message: e.message,
      status: res.status,
      field: typeof e.field === 'string' && e.field ? e.field : undefined,
      requestId: typeof e.requestId === 'string' ? e.requestId : (res.headers.get('X-Request-Id') ?? undefined),
    });
  }
  const snippet = text.trim().slice(0, 200);
  return new ApiError({
    code: codeForStatus(res.status),
    message: `${res.status} ${res.statusText || 'error'}${snippet && !snippet.startsWith('<') ? ': ' + snippet : ''}`,
    status: res.status,
    requestId: res.headers.get('X-Request-Id') ?? undefined,
  });
}

export function codeForStatus(status: number): ErrorCode {
  switch (status) {
    case 400:
      return 'invalid_argument';
    case 401:
      return 'unauthenticated';
    case 403:
      return 'permission_denied';
    case 404:
      return 'not_found';
    case 409:
      return 'conflict';
    case 413:
      return 'too_large';
    case 429:
      return 'rate_limited';
    case 502:
    case 503:
    case 504:
      return 'unavailable';
    default:
      return status >= 500 ? 'internal' : 'bad_response';
  }
}

/** Sends one request to the API and decodes its JSON answer (undefined for 204). */
export async function request<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  const method = (opts.method ?? 'GET').toUpperCase();
  const headers: Record<string, string> = { ...opts.headers, Accept: 'application/json' };
  if (opts.raw !== undefined) headers['Content-Type'] = opts.rawType ?? 'text/plain';
  else if (opts.body !== undefined) headers['Content-Type'] = 'application/json';
  if (!SAFE.has(method)) {
    const csrf = readCookie(CSRF_COOKIE);
    if (csrf) headers[CSRF_HEADER] = csrf;
  }
  let res: Response;
  try {
    res = await fetchImpl(path + buildQuery(opts.query), {
      method,
      headers,
      body: opts.raw !== undefined ? opts.raw : opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: 'same-origin',
      signal: opts.signal,
    });
  } catch (err) {
    if ((err as { name?: string })?.name === 'AbortError') throw err;
    throw new ApiError({ code: 'network', message: 'Cannot reach the Freshet server. Check that it is running and try again.', status: 0 });
  }
  if (!res.ok) {
    const err = await errorFromResponse(res);
    if (err.status === 401 && !opts.quiet401) onUnauthenticated?.(err);
    throw err;
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  if (!text) return undefined as T;
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new ApiError({ code: 'bad_response', message: `The server answered ${path} with something that is not JSON.`, status: res.status });
  }
}

/** A human sentence for an error of any kind. */
export function errorMessage(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

/** For forms: the message for one field, if the error names it. */
export function fieldError(err: unknown, field: string): string | undefined {
  return err instanceof ApiError && err.field === field ? err.message : undefined;
}
