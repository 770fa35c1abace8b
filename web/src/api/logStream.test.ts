import { describe, expect, it, vi } from 'vitest';
import { SSEParser, base64Bytes, followLog, type FollowState, type SSEMessage } from './logStream';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const logEvent = (offset: number, s: string) => `event: log\ndata: {"offset":${offset},"data":"${b64(s)}"}\n\n`;
const endEvent = (status: string) => `event: end\ndata: {"status":"${status}"}\n\n`;

function parseAll(pieces: string[]): SSEMessage[] {
  const out: SSEMessage[] = [];
  const p = new SSEParser((m) => out.push(m));
  for (const piece of pieces) p.push(piece);
  return out;
}

describe('SSEParser', () => {
  const stream = ': ping\n\n' + logEvent(0, 'hello\n') + 'event: log\r\ndata: {"offset":6,"data":""}\r\n\r\n' + 'data: a\ndata: b\n\n' + endEvent('success');
  const want = [
    { event: 'log', data: `{"offset":0,"data":"${b64('hello\n')}"}` },
    { event: 'log', data: '{"offset":6,"data":""}' },
    { event: 'message', data: 'a\nb' },
    { event: 'end', data: '{"status":"success"}' },
  ];

  it('reads events, joins data lines and skips comments', () => {
    expect(parseAll([stream])).toEqual(want);
  });

  it('gives the same events however the stream is cut: at every position, and byte by byte', () => {
    for (let i = 0; i <= stream.length; i++) expect(parseAll([stream.slice(0, i), stream.slice(i)])).toEqual(want);
    expect(parseAll(stream.split(''))).toEqual(want);
  });

  it('treats \\r, \\n and \\r\\n as line ends, also when \\r\\n is split', () => {
    expect(parseAll(['event: end\rdata: {}\r', '\n\r\n'])).toEqual([{ event: 'end', data: '{}' }]);
    expect(parseAll(['data:x\n', '\n'])).toEqual([{ event: 'message', data: 'x' }]);
  });

  it('waits for the blank line: an event cut short is not delivered', () => {
    expect(parseAll(['event: log\ndata: {}\n'])).toEqual([]);
  });
});

describe('base64Bytes', () => {
  it('decodes what Go writes for []byte, including bytes above 127', () => {
    expect(Array.from(base64Bytes(Buffer.from([0, 1, 200, 255]).toString('base64')))).toEqual([0, 1, 200, 255]);
    expect(new TextDecoder().decode(base64Bytes(b64('héllo')))).toBe('héllo');
  });
});

/** A Response whose body yields the given pieces, then ends (or fails with `error`). */
function sseResponse(pieces: string[], error?: Error): Response {
  const enc = new TextEncoder();
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(ctl) {
      if (i < pieces.length) ctl.enqueue(enc.encode(pieces[i++]));
      else if (error) ctl.error(error);
      else ctl.close();
    },
  });
  return new Response(body, { status: 200, headers: { 'Content-Type': 'text/event-stream' } });
}

describe('followLog', () => {
  it('reconnects from the last offset after a dropped stream and drops bytes sent twice', async () => {
    const urls: string[] = [];
    const answers = [
      // First connection: "abc" then "de", then the connection drops mid-event.
      () => sseResponse([logEvent(0, 'abc'), logEvent(3, 'de'), 'event: log\ndata: {"off'], new TypeError('network')),
      // The server resends from an earlier chunk boundary: "cdef" from 2 overlaps "de".
      () => sseResponse([logEvent(3, 'defg'), logEvent(7, 'h\n'), endEvent('failed')]),
    ];
    const fetch = vi.fn(async (url: string) => {
      urls.push(url);
      return answers.shift()!();
    });
    const chunks: [number, string][] = [];
    const states: FollowState[] = [];
    let end = '';
    const next = await followLog('bld_1', {
      onData: (off, bytes) => chunks.push([off, new TextDecoder().decode(bytes)]),
      onEnd: (s) => (end = s),
      onState: (s) => states.push(s),
      signal: new AbortController().signal,
      fetch,
      backoff: [1],
    });
    expect(urls).toEqual(['/api/v1/builds/bld_1/logs?follow=1&offset=0', '/api/v1/builds/bld_1/logs?follow=1&offset=5']);
    expect(chunks).toEqual([
      [0, 'abc'],
      [3, 'de'],
      [5, 'fg'],
      [7, 'h\n'],
    ]);
    expect(end).toBe('failed');
    expect(next).toBe(9);
    expect(states).toEqual(['connecting', 'live', 'reconnecting', 'live', 'ended']);
  });

  it('reconnects after a stream that closes without an end event, and after a 503', async () => {
    const answers = [
      () => sseResponse([logEvent(0, 'one\n')]),
      () => new Response('{"error":{"code":"unavailable","message":"not ready"}}', { status: 503 }),
      () => sseResponse([logEvent(4, 'two\n'), endEvent('success')]),
    ];
    const urls: string[] = [];
    let text = '';
    await followLog('b', {
      offset: 0,
      onData: (_o, b) => (text += new TextDecoder().decode(b)),
      onEnd: () => {},
      signal: new AbortController().signal,
      fetch: async (url) => (urls.push(url), answers.shift()!()),
      backoff: [1],
    });
    expect(text).toBe('one\ntwo\n');
    expect(urls.map((u) => u.split('offset=')[1])).toEqual(['0', '4', '4']);
  });

  it('outlasts an outage of any length: refused connections and 502s, then resumes from its offset', async () => {
    const answers: (() => Response)[] = [() => sseResponse([logEvent(0, 'one\n')], new TypeError('network'))];
    // The control plane is away for 40 attempts: the browser cannot connect, or a proxy answers 502.
    for (let i = 0; i < 40; i++) {
      answers.push(i % 2 ? () => new Response('<html>Bad Gateway</html>', { status: 502 }) : () => { throw new TypeError('Failed to fetch'); });
    }
    answers.push(() => sseResponse([logEvent(4, 'two\n'), endEvent('success')]));
    const urls: string[] = [];
    const states: FollowState[] = [];
    let text = '';
    let end = '';
    await followLog('b', {
      onData: (_o, b) => (text += new TextDecoder().decode(b)),
      onEnd: (s) => (end = s),
      onState: (s) => states.push(s),
      signal: new AbortController().signal,
      fetch: async (url) => (urls.push(url), answers.shift()!()),
      backoff: [1],
    });
    expect(text).toBe('one\ntwo\n');
    expect(end).toBe('success');
    expect(urls).toHaveLength(42);
    expect(urls.slice(1).every((u) => u.endsWith('offset=4'))).toBe(true);
    expect(states.filter((s) => s === 'failed')).toEqual([]);
    expect(states.slice(-2)).toEqual(['live', 'ended']);
  });

  it('waits the first backoff again after a connection came up', async () => {
    const waits: number[] = [];
    const answers = [
      () => new Response('', { status: 503 }),
      () => new Response('', { status: 503 }),
      () => new Response('', { status: 503 }),
      () => sseResponse([': ping\n\n']), // up, then closed before any byte or the end
      () => new Response('', { status: 503 }),
      () => sseResponse([logEvent(0, 'b'), endEvent('success')]),
    ];
    const realSetTimeout = globalThis.setTimeout;
    const spy = vi.spyOn(globalThis, 'setTimeout').mockImplementation(((fn: () => void, ms?: number) => {
      waits.push(ms ?? 0);
      return realSetTimeout(fn, 0);
    }) as typeof setTimeout);
    try {
      await followLog('b', {
        onData: () => {},
        onEnd: () => {},
        signal: new AbortController().signal,
        fetch: async () => answers.shift()!(),
        backoff: [10, 20, 40, 80],
      });
    } finally {
      spy.mockRestore();
    }
    expect(waits).toEqual([10, 20, 40, 10, 20]);
  });

  it('stops with the error on a 404, without retrying', async () => {
    const fetch = vi.fn(async () => new Response('{"error":{"code":"not_found","message":"build bld_x not found"}}', { status: 404 }));
    const states: FollowState[] = [];
    const err = await followLog('bld_x', { onData: () => {}, onEnd: () => {}, onState: (s) => states.push(s), signal: new AbortController().signal, fetch, backoff: [1] }).catch((e) => e);
    expect(err).toMatchObject({ code: 'not_found', status: 404 });
    expect(fetch).toHaveBeenCalledTimes(1);
    expect(states).toEqual(['connecting', 'failed']);
  });

  it('ends quietly when aborted', async () => {
    const ctl = new AbortController();
    const fetch = vi.fn(async () => {
      ctl.abort();
      throw new DOMException('aborted', 'AbortError');
    });
    expect(await followLog('b', { offset: 7, onData: () => {}, onEnd: () => {}, signal: ctl.signal, fetch })).toBe(7);
  });
});
