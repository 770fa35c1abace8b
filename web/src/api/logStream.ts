// Following a build's log: GET /api/v1/builds/{id}/logs?follow=1&offset=N answers server-sent
// events — `log` {offset, data (base64)} until the build ends, then `end` {status}. EventSource
// cannot resume from a byte offset of our choosing or report HTTP errors, so this reads the
// stream with fetch and parses it here. When the connection drops before `end`, it reconnects
// from the last byte received; bytes sent twice are dropped by their offset.
import { ApiError, errorFromResponse, notifyUnauthenticated } from './client';

export interface SSEMessage {
  event: string;
  data: string;
}

/**
 * An incremental text/event-stream parser: feed it text in pieces cut anywhere (inside a line,
 * between \r and \n) and it calls back once per complete event. Comments (": ping") and the
 * id/retry fields are ignored.
 */
export class SSEParser {
  private buf = '';
  private event = '';
  private data: string[] = [];
  private afterCR = false;

  constructor(private readonly onMessage: (m: SSEMessage) => void) {}

  push(text: string): void {
    if (!text) return;
    let s = text;
    if (this.afterCR && s[0] === '\n') s = s.slice(1); // the \n of a \r\n cut in two
    this.afterCR = false;
    let start = 0;
    const n = s.length;
    for (let i = 0; i < n; i++) {
      const c = s.charCodeAt(i);
      if (c !== 10 && c !== 13) continue;
      const line = (this.buf ? this.buf + s.slice(start, i) : s.slice(start, i));
      this.buf = '';
      this.line(line);
      if (c === 13) {
        if (i + 1 < n) {
          if (s.charCodeAt(i + 1) === 10) i++;
        } else {
          this.afterCR = true;
        }
      }
      start = i + 1;
    }
    if (start < n) this.buf += s.slice(start);
  }

  private line(line: string) {
    if (line === '') {
      if (this.data.length > 0) this.onMessage({ event: this.event || 'message', data: this.data.join('\n') });
      this.event = '';
      this.data = [];
      return;
    }
    if (line[0] === ':') return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value[0] === ' ') value = value.slice(1);
    if (field === 'event') this.event = value;
    else if (field === 'data') this.data.push(value);
  }
}

/** Decodes standard base64 (what Go's encoding/json writes for []byte). */
export function base64Bytes(b64: string): Uint8Array {
  const bin = atob(b64);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

export type FollowState = 'connecting' | 'live' | 'reconnecting' | 'ended' | 'failed';

export interface FollowOptions {
  /** The first byte wanted (0 for the whole log). */
  offset?: number;
  /** New bytes of the log, in order, each byte once; `offset` is where they start. */
  onData: (offset: number, bytes: Uint8Array) => void;
  /** The build ended and the whole log was sent. */
  onEnd: (status: string) => void;
  onState?: (s: FollowState, error?: unknown) => void;
  signal: AbortSignal;
  /** For tests. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
  /** Waits between reconnects, in ms, by attempt (the last repeats); for tests. */
  backoff?: number[];
}

const BACKOFF = [250, 500, 1000, 2000, 4000];

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });
}

/**
 * Follows a build's log until it ends, the signal aborts, or the server refuses (4xx other than
 * 408 and 429). Network failures, 5xx answers (a proxy in front of a restarting control plane)
 * and dropped streams reconnect from the last offset, with backoff, for as long as it takes:
 * there is no retry budget to run out of during an outage. A connection that comes up resets the
 * backoff. Resolves with the next offset wanted.
 */
export async function followLog(buildId: string, o: FollowOptions): Promise<number> {
  const doFetch = o.fetch ?? ((url: string, init: RequestInit) => fetch(url, init));
  const backoff = o.backoff ?? BACKOFF;
  let have = o.offset ?? 0;
  let failures = 0;
  o.onState?.('connecting');
  while (!o.signal.aborted) {
    let ended = false;
    try {
      const res = await doFetch(`/api/v1/builds/${encodeURIComponent(buildId)}/logs?follow=1&offset=${have}`, {
        headers: { Accept: 'text/event-stream' },
        credentials: 'same-origin',
        signal: o.signal,
        cache: 'no-store',
      });
      if (!res.ok) {
        const err = await errorFromResponse(res);
        if (err.status === 401) notifyUnauthenticated(err);
        if (err.status >= 400 && err.status < 500 && err.status !== 408 && err.status !== 429) {
          o.onState?.('failed', err);
          throw err;
        }
        throw new RetryableError(err);
      }
      if (!res.body) throw new RetryableError(new Error('the log stream has no body'));
      o.onState?.('live');
      failures = 0; // connected: the next drop waits the first backoff again
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      const parser = new SSEParser((m) => {
        if (m.event === 'log') {
          const ev = JSON.parse(m.data) as { offset: number; data?: string };
          let bytes = ev.data ? base64Bytes(ev.data) : new Uint8Array(0);
          let at = ev.offset;
          if (at + bytes.length <= have) return; // all seen before a reconnect
          if (at < have) {
            bytes = bytes.subarray(have - at);
            at = have;
          }
          have = at + bytes.length;
          if (bytes.length) o.onData(at, bytes);
        } else if (m.event === 'end') {
          ended = true;
          const ev = JSON.parse(m.data) as { status?: string };
          o.onEnd(ev.status ?? '');
        }
      });
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        parser.push(decoder.decode(value, { stream: true }));
        if (ended) {
          reader.cancel().catch(() => {});
          break;
        }
      }
      parser.push(decoder.decode());
      if (ended) {
        o.onState?.('ended');
        return have;
      }
      throw new RetryableError(new Error('the log stream closed before the build ended'));
    } catch (e) {
      if (o.signal.aborted || (e as { name?: string })?.name === 'AbortError') break;
      if (!(e instanceof RetryableError) && e instanceof ApiError) throw e;
      if (e instanceof SyntaxError) {
        o.onState?.('failed', e);
        throw e;
      }
      const cause = e instanceof RetryableError ? e.cause : e;
      o.onState?.('reconnecting', cause);
      await sleep(backoff[Math.min(failures, backoff.length - 1)], o.signal);
      failures++;
    }
  }
  return have;
}

class RetryableError extends Error {
  constructor(readonly cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause));
  }
}
