// A build's log as a terminal: follows the live stream (logStream.ts), keeps the text in a
// LogBuffer, and draws only the rows in view, so 100,000 lines scroll like 50. ANSI colours
// become class names on text nodes (ansi.ts); nothing from the log is ever parsed as HTML.
import { forwardRef, memo, useCallback, useEffect, useImperativeHandle, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent, type MouseEvent } from 'react';
import { errorMessage } from '../api/client';
import { followLog, type FollowState } from '../api/logStream';
import { builds } from '../api/ci';
import { parseAnsi, styleClass, type Style } from '../lib/ansi';
import type { BuildStep } from '../api/types';
import { elapsed, formatDuration, statusIcon, statusLabel, stepStartPattern } from '../lib/builds';
import { rowOfLine, scanSections, sectionEnd, sectionOf, visibleLines, type LogSection } from '../lib/logSections';
import { LogBuffer } from '../lib/logBuffer';
import { findMatches, firstMatchFrom, splitForHighlight, stepMatch, type Match } from '../lib/logSearch';
import { logWindow, scrollTopForRow } from '../lib/virtual';
import { copyText } from '../lib/clipboard';
import { Spinner } from './States';

export const LOG_ROW = 20;
const OVERSCAN = 15;
const MIN_HEIGHT = 360;

export interface BuildLogHandle {
  /** Scrolls to where a step starts in the log; false when the log does not show it (yet). */
  jumpToStep: (name: string) => boolean;
}

export interface BuildLogProps {
  buildId: string;
  /** A name for the downloaded file. */
  fileName: string;
  /** Called when the stream says the build ended (the page refreshes the build). */
  onEnd?: (status: string) => void;
  /** Called when new output arrives (the page may refresh step states). */
  onOutput?: () => void;
  /** The build's steps: each step section's header shows its state, start and duration. */
  steps?: readonly BuildStep[];
  /** Step titles from the spec, by step name. */
  titles?: ReadonlyMap<string, string>;
}

function firstLineFromHash(): number | undefined {
  const m = /^#L(\d+)$/.exec(window.location.hash);
  return m ? Number(m[1]) : undefined;
}

export const BuildLog = forwardRef<BuildLogHandle, BuildLogProps>(function BuildLog({ buildId, fileName, onEnd, onOutput, steps, titles }, ref) {
  const buf = useRef<LogBuffer>(null as unknown as LogBuffer);
  if (!buf.current) buf.current = new LogBuffer();
  const [version, setVersion] = useState(0);
  const [stream, setStream] = useState<{ state: FollowState; error?: unknown }>({ state: 'connecting' });
  const [ended, setEnded] = useState(false);
  const [nonce, setNonce] = useState(0);
  const scroller = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 480 });
  const [follow, setFollow] = useState(() => firstLineFromHash() === undefined);
  const [focusLine, setFocusLine] = useState<number | undefined>(() => firstLineFromHash());
  const programmaticTop = useRef<number | undefined>(undefined);
  const frame = useRef(0);
  const redraw = useRef(0);
  const painted = useRef(false);
  const onEndRef = useRef(onEnd);
  onEndRef.current = onEnd;
  const onOutputRef = useRef(onOutput);
  onOutputRef.current = onOutput;

  // Redraw at most once a frame however many chunks arrive.
  const schedule = useCallback(() => {
    if (redraw.current) return;
    redraw.current = requestAnimationFrame(() => {
      redraw.current = 0;
      setVersion(buf.current.version);
    });
  }, []);

  useEffect(() => {
    const ctl = new AbortController();
    const b = buf.current;
    followLog(buildId, {
      offset: b.bytes,
      signal: ctl.signal,
      onData: (_off, bytes) => {
        b.append(bytes);
        schedule();
        onOutputRef.current?.();
      },
      onEnd: (status) => {
        b.finish();
        setEnded(true);
        schedule();
        onEndRef.current?.(status);
      },
      onState: (state, error) => !ctl.signal.aborted && setStream({ state, error }),
    }).catch((error) => !ctl.signal.aborted && setStream({ state: 'failed', error }));
    return () => {
      ctl.abort();
      cancelAnimationFrame(redraw.current);
      redraw.current = 0;
    };
  }, [buildId, nonce, schedule]);

  const count = buf.current.count;

  // Step sections, scanned as complete lines arrive; folded ones show their start line only.
  const sectionsRef = useRef<{ list: LogSection[]; scanned: number }>({ list: [], scanned: 0 });
  {
    const sc = sectionsRef.current;
    const done = buf.current.completeLines;
    if (done > sc.scanned) {
      scanSections(sc.list, sc.scanned, done, (i) => buf.current.plain(i));
      sc.scanned = done;
    }
  }
  const sections = sectionsRef.current.list;
  const [folded, setFolded] = useState<ReadonlySet<number>>(() => new Set());
  const rows = useMemo(() => visibleLines(sections, count, folded), [sections, sections.length, count, folded]);
  const total = rows ? rows.length : count;
  const rowsRef = useRef(rows);
  rowsRef.current = rows;
  const foldedRef = useRef(folded);
  foldedRef.current = folded;
  /** Where to scroll once a fold change is drawn: a row, and how to place it. */
  const pendingRow = useRef<{ row: number; where: 'top' | 'center' } | undefined>(undefined);
  const toggleFold = useCallback((start: number) => {
    setFolded((f) => {
      const n = new Set(f);
      if (n.has(start)) n.delete(start);
      else n.add(start);
      return n;
    });
  }, []);

  // Performance marks for the browser test: the first rows on screen, and the whole log.
  useEffect(() => {
    if (count > 0 && !painted.current) {
      painted.current = true;
      requestAnimationFrame(() => performance.mark('freshet:log-first-paint', { detail: { lines: count } }));
    }
    if (ended) requestAnimationFrame(() => performance.mark('freshet:log-complete', { detail: { lines: buf.current.count } }));
  }, [count, ended]);

  const measure = useCallback(() => {
    cancelAnimationFrame(frame.current);
    frame.current = requestAnimationFrame(() => {
      const el = scroller.current;
      if (el) setView((v) => (v.top === el.scrollTop && v.height === el.clientHeight ? v : { top: el.scrollTop, height: el.clientHeight }));
    });
  }, []);

  useEffect(() => {
    const el = scroller.current;
    if (!el) return;
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => {
      ro.disconnect();
      cancelAnimationFrame(frame.current);
    };
  }, [measure]);

  const scrollTo = (top: number) => {
    const el = scroller.current;
    if (!el) return;
    el.scrollTop = top;
    programmaticTop.current = el.scrollTop;
    measure();
  };

  // The log takes the rest of the window below it (at least MIN_HEIGHT): with follow on, the
  // newest line is on screen without scrolling the page.
  const [fitHeight, setFitHeight] = useState<number>();
  useLayoutEffect(() => {
    const el = scroller.current;
    const page = el?.closest('section')?.parentElement;
    if (!el || !page) return;
    const fit = () => {
      const top = el.getBoundingClientRect().top + window.scrollY;
      const h = Math.max(MIN_HEIGHT, Math.round(window.innerHeight - top - 16));
      setFitHeight((prev) => (prev !== undefined && Math.abs(prev - h) < 2 ? prev : h));
    };
    fit();
    // What is above the log (the step graph) changes height as the build runs; the page's size
    // changes with it. Fitting again changes the page's size once more, to the same height.
    const ro = new ResizeObserver(fit);
    ro.observe(page);
    window.addEventListener('resize', fit);
    return () => {
      ro.disconnect();
      window.removeEventListener('resize', fit);
    };
  }, []);

  // Follow: stay at the end as lines arrive.
  useLayoutEffect(() => {
    const el = scroller.current;
    if (follow && el && el.scrollTop + el.clientHeight < el.scrollHeight - 1) scrollTo(el.scrollHeight);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [version, follow]);

  const onScroll = () => {
    const el = scroller.current;
    if (!el) return;
    measure();
    if (programmaticTop.current !== undefined && Math.abs(el.scrollTop - programmaticTop.current) < 2) return;
    programmaticTop.current = undefined;
    const atEnd = el.scrollTop + el.clientHeight >= el.scrollHeight - LOG_ROW;
    if (follow && !atEnd) setFollow(false);
    else if (!follow && atEnd && !ended) setFollow(true);
  };

  const placeRow = (row: number, where: 'top' | 'center') => {
    const el = scroller.current;
    if (!el) return;
    const n = rowsRef.current ? rowsRef.current.length : buf.current.count;
    const rowsInView = Math.floor(el.clientHeight / LOG_ROW);
    const first = where === 'center' ? row - Math.floor(rowsInView / 2) : Math.max(0, row - 2);
    const win = logWindow(el.scrollTop, el.clientHeight, LOG_ROW, n, 0);
    const visible = row >= win.start + 1 && row < win.end - 1;
    if (where === 'top' || !visible) scrollTo(scrollTopForRow(Math.max(0, first), el.clientHeight, LOG_ROW, n));
  };
  useLayoutEffect(() => {
    const p = pendingRow.current;
    if (!p) return;
    pendingRow.current = undefined;
    placeRow(p.row, p.where);
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [folded]);

  const showLine = useCallback(
    (index: number, where: 'top' | 'center' = 'center') => {
      const el = scroller.current;
      if (!el) return;
      setFollow(false);
      // A line folded away: unfold its section first, then scroll once that is drawn.
      const list = sectionsRef.current.list;
      const k = sectionOf(list, index);
      const f = foldedRef.current;
      if (k >= 0 && f.has(list[k].start) && index !== list[k].start) {
        const nf = new Set(f);
        nf.delete(list[k].start);
        const nrows = visibleLines(list, buf.current.count, nf);
        pendingRow.current = { row: rowOfLine(nrows, index), where };
        setFolded(nf);
        return;
      }
      placeRow(rowOfLine(rowsRef.current, index), where);
    },
    // eslint-disable-next-line react-hooks/exhaustive-deps
    [],
  );

  // A shared link to a line (#L120): go there once the log has it.
  const hashDone = useRef(false);
  useEffect(() => {
    if (hashDone.current || focusLine === undefined) return;
    if (count >= focusLine || ended) {
      hashDone.current = true;
      showLine(Math.min(focusLine, count) - 1, 'center');
    }
  }, [count, ended, focusLine, showLine]);

  useImperativeHandle(
    ref,
    () => ({
      jumpToStep(name) {
        const b = buf.current;
        const is = stepStartPattern(name);
        for (let i = 0; i < b.count; i++) {
          if (is(b.plain(i))) {
            setFocusLine(i + 1);
            showLine(i, 'top');
            return true;
          }
        }
        return false;
      },
    }),
    [showLine],
  );

  // Search.
  const [query, setQuery] = useState('');
  const [found, setFound] = useState<{ matches: Match[]; more: boolean }>({ matches: [], more: false });
  const [current, setCurrent] = useState(-1);
  const lastSearch = useRef({ query: '', at: 0 });
  const searchTimer = useRef(0);
  useEffect(() => {
    const run = () => {
      searchTimer.current = 0;
      const b = buf.current;
      const res = findMatches((i) => b.plain(i), b.count, query);
      const fresh = lastSearch.current.query !== query;
      lastSearch.current = { query, at: performance.now() };
      setFound(res);
      if (fresh) {
        const el = scroller.current;
        const topRow = el ? logWindow(el.scrollTop, el.clientHeight, LOG_ROW, rowsRef.current ? rowsRef.current.length : b.count, 0).start : 0;
        const top = rowsRef.current ? (rowsRef.current[topRow] ?? 0) : topRow;
        const i = firstMatchFrom(res.matches, top);
        setCurrent(i);
        if (i >= 0) showLine(res.matches[i].line);
      } else {
        setCurrent((c) => (c < res.matches.length ? c : res.matches.length - 1));
      }
    };
    if (!query) {
      lastSearch.current = { query: '', at: 0 };
      setFound({ matches: [], more: false });
      setCurrent(-1);
      return;
    }
    if (lastSearch.current.query !== query) {
      window.clearTimeout(searchTimer.current);
      searchTimer.current = window.setTimeout(run, 150);
    } else if (!searchTimer.current) {
      // New output with a search open: search again at most twice a second.
      searchTimer.current = window.setTimeout(run, Math.max(0, 500 - (performance.now() - lastSearch.current.at)));
    }
  }, [query, version, showLine]);
  useEffect(() => () => window.clearTimeout(searchTimer.current), []);

  const go = (dir: 1 | -1) => {
    const next = stepMatch(current, found.matches.length, dir);
    if (next < 0) return;
    setCurrent(next);
    showLine(found.matches[next].line);
  };

  const searchInput = useRef<HTMLInputElement>(null);
  const onSearchKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      go(e.shiftKey ? -1 : 1);
    } else if (e.key === 'Escape' && query) {
      e.preventDefault();
      e.stopPropagation();
      setQuery('');
    }
  };
  const onViewKey = (e: KeyboardEvent<HTMLDivElement>) => {
    if ((e.ctrlKey || e.metaKey) && e.key.toLowerCase() === 'f') {
      // The browser's find cannot see rows that are not drawn: use ours.
      e.preventDefault();
      searchInput.current?.focus();
      searchInput.current?.select();
    } else if (e.key === 'End' && !e.shiftKey) {
      e.preventDefault();
      setFollow(true);
      scrollTo(scroller.current?.scrollHeight ?? 0);
    } else if (e.key === 'Home' && !e.shiftKey) {
      e.preventDefault();
      setFollow(false);
      scrollTo(0);
    }
  };

  const [copied, setCopied] = useState<'idle' | 'copied' | 'failed'>('idle');
  useEffect(() => {
    if (copied === 'idle') return;
    const t = setTimeout(() => setCopied('idle'), 2000);
    return () => clearTimeout(t);
  }, [copied]);
  const copy = async () => setCopied((await copyText(buf.current.text())) ? 'copied' : 'failed');

  const onLineClick = (e: MouseEvent<HTMLElement>) => {
    const a = (e.target as HTMLElement).closest('a.log-ln');
    if (!a) return;
    e.preventDefault();
    const n = Number(a.getAttribute('data-n'));
    setFocusLine(n);
    history.replaceState(history.state, '', `${window.location.pathname}${window.location.search}#L${n}`);
  };

  const win = logWindow(view.top, view.height, LOG_ROW, total, OVERSCAN);
  const drawn = [];
  const b = buf.current;
  const firstLine = rows ? (rows[win.start] ?? count) : win.start;
  let m = firstMatchFrom(found.matches, firstLine);
  if (m >= 0 && found.matches[m].line < firstLine) m = found.matches.length; // wrapped: none in view
  const stepByName = new Map((steps ?? []).map((s) => [s.name, s]));
  let k = sectionOf(sections, firstLine);
  for (let r = win.start; r < win.end; r++) {
    const i = rows ? rows[r] : r;
    if (m >= 0) while (m < found.matches.length && found.matches[m].line < i) m++;
    let mTo = m < 0 ? -1 : m;
    if (m >= 0) while (mTo < found.matches.length && found.matches[mTo].line === i) mTo++;
    while (k + 1 < sections.length && sections[k + 1].start <= i) k++;
    const sec = k >= 0 && sections[k].start === i ? sections[k] : undefined;
    drawn.push(
      <LogRow
        key={i}
        index={i}
        pos={r}
        line={b.line(i)}
        start={b.startStyle(i)}
        matches={found.matches}
        mFrom={m < 0 ? 0 : m}
        mTo={m < 0 ? 0 : mTo}
        current={current}
        focused={focusLine === i + 1}
        fold={sec && foldInfo(sec, sectionEnd(sections, k, count) - sec.start - 1, folded.has(sec.start), stepByName.get(sec.name), titles?.get(sec.name), toggleFold)}
      />,
    );
    if (m >= 0) m = mTo;
  }

  const live = stream.state === 'live' && !ended;
  const status =
    stream.state === 'failed' ? (
      <span className="log-state log-state-error" role="alert">
        Could not load the log: {errorMessage(stream.error)}{' '}
        <button type="button" className="link-button" onClick={() => setNonce((n) => n + 1)}>
          Try again
        </button>
      </span>
    ) : stream.state === 'reconnecting' ? (
      <span className="log-state log-state-warn">
        <Spinner label="Reconnecting" /> Reconnecting…
      </span>
    ) : ended ? (
      <span className="log-state">Complete</span>
    ) : live ? (
      <span className="log-state log-state-live">
        <span className="live-dot" aria-hidden="true" /> Live
      </span>
    ) : (
      <span className="log-state">
        <Spinner label="Connecting" /> Connecting…
      </span>
    );

  return (
    <section className="log" aria-label="Build log" data-testid="build-log" data-lines={count} data-ended={ended ? 'true' : undefined} data-follow={follow ? 'true' : 'false'}>
      <div className="log-toolbar" role="toolbar" aria-label="Log tools">
        <div className="log-search" role="search">
          <input
            ref={searchInput}
            type="search"
            placeholder="Search the log"
            aria-label="Search the log"
            value={query}
            onChange={(e) => setQuery(e.target.value)}
            onKeyDown={onSearchKey}
          />
          <button type="button" className="icon-button" onClick={() => go(-1)} disabled={found.matches.length === 0} aria-label="Previous match" title="Previous match (Shift+Enter)">
            ↑
          </button>
          <button type="button" className="icon-button" onClick={() => go(1)} disabled={found.matches.length === 0} aria-label="Next match" title="Next match (Enter)">
            ↓
          </button>
          <span className="log-count muted small" aria-live="polite" data-testid="log-matches">
            {query ? (found.matches.length ? `${current + 1} of ${found.matches.length.toLocaleString('en-US')}${found.more ? '+' : ''}` : 'No matches') : ''}
          </span>
        </div>
        <div className="log-tools">
          {status}
          <span className="muted small tabular">{count.toLocaleString('en-US')} lines</span>
          <button
            type="button"
            className={follow ? 'button button-small button-on' : 'button button-small'}
            aria-pressed={follow}
            onClick={() => {
              const on = !follow;
              setFollow(on);
              if (on) scrollTo(scroller.current?.scrollHeight ?? 0);
            }}
            title="Keep the newest lines in view (End)"
          >
            Follow
          </button>
          <button type="button" className="button button-small" onClick={copy} disabled={count === 0} aria-live="polite">
            {copied === 'copied' ? 'Copied' : copied === 'failed' ? 'Copy failed' : 'Copy'}
          </button>
          <a className="button button-small" href={builds.logURL(buildId)} download={fileName}>
            Download
          </a>
        </div>
      </div>
      <div ref={scroller} className="log-view" style={fitHeight ? { height: fitHeight } : undefined} tabIndex={0} onScroll={onScroll} onKeyDown={onViewKey} onClick={onLineClick} aria-label="Log output" role="log" aria-live="off">
        {count === 0 ? (
          <div className="log-empty muted">{ended ? 'This build wrote no output.' : stream.state === 'failed' ? '' : 'Waiting for output…'}</div>
        ) : (
          <div className="log-inner" style={{ height: win.height }}>
            <div className="log-window" style={{ transform: win.shift ? `translateY(${-win.shift}px)` : undefined }}>
              {drawn}
            </div>
          </div>
        )}
      </div>
    </section>
  );
});

/** A step section's start line: its fold button and the step's state, start and duration. */
export interface FoldInfo {
  name: string;
  title?: string;
  folded: boolean;
  /** Lines in the section after its start line. */
  lines: number;
  /** "success · started 12:00:01 · 4.2s" */
  meta: string;
  status?: string;
  onToggle: () => void;
}

export function foldInfo(sec: LogSection, lines: number, folded: boolean, step: BuildStep | undefined, title: string | undefined, toggle: (start: number) => void): FoldInfo {
  const parts: string[] = [];
  if (step) {
    parts.push(statusLabel(step.status));
    if (step.startedAt) parts.push(`started ${new Date(step.startedAt).toLocaleTimeString('en-GB', { hour12: false })}`);
    const ms = elapsed(step.startedAt, step.finishedAt);
    if (step.startedAt && ms !== undefined) parts.push(step.finishedAt ? formatDuration(ms) : `${formatDuration(ms)} so far`);
  }
  if (sec.attempts > 1) parts.push(`attempt ${sec.attempt} of ${sec.attempts}`);
  if (folded) parts.push(`${lines.toLocaleString('en-US')} line${lines === 1 ? '' : 's'} folded`);
  return { name: sec.name, title, folded, lines, meta: parts.join(' · '), status: step?.status, onToggle: () => toggle(sec.start) };
}

export interface RowProps {
  index: number;
  /** The row it is drawn at (index, unless sections above are folded). */
  pos?: number;
  /** Set on a step section's start line. */
  fold?: FoldInfo;
  line: string;
  start: Style;
  matches: Match[];
  mFrom: number;
  mTo: number;
  current: number;
  focused: boolean;
}

// A row re-renders only when its text, its matches or the current match change: while
// scrolling, rows that stay in view cost nothing.
export const LogRow = memo(
  function LogRow({ index, pos = index, fold, line, start, matches, mFrom, mTo, current, focused }: RowProps) {
    const { segments } = parseAnsi(line, start);
    const n = index + 1;
    let body;
    if (mTo > mFrom) {
      const pieces = splitForHighlight(segments, matches.slice(mFrom, mTo));
      body = pieces.map((p, k) => {
        const cls = styleClass(p.seg.style);
        if (p.mark < 0) return cls ? <span key={k} className={cls}>{p.text}</span> : p.text;
        const hit = mFrom + p.mark === current ? 'log-hit log-hit-current' : 'log-hit';
        return (
          <mark key={k} className={cls ? `${hit} ${cls}` : hit}>
            {p.text}
          </mark>
        );
      });
    } else {
      body = segments.map((s, k) => {
        const cls = styleClass(s.style);
        return cls ? (
          <span key={k} className={cls}>
            {s.text}
          </span>
        ) : (
          s.text
        );
      });
    }
    return (
      <div
        className={(focused ? 'log-row log-row-focus' : 'log-row') + (fold ? ' log-step-row' : '')}
        style={{ transform: `translateY(${pos * LOG_ROW}px)` }}
        data-line={n}
        data-step={fold?.name}
        data-folded={fold ? String(fold.folded) : undefined}
      >
        <a className="log-ln" href={`#L${n}`} data-n={n} tabIndex={-1} aria-hidden="true">
          {n}
        </a>
        {fold && (
          <button
            type="button"
            className="log-fold"
            aria-expanded={!fold.folded}
            aria-label={`${fold.folded ? 'Expand' : 'Collapse'} step ${fold.name}`}
            title={`${fold.folded ? 'Expand' : 'Collapse'} the output of step ${fold.name}`}
            onClick={fold.onToggle}
          >
            {fold.folded ? '▸' : '▾'}
          </button>
        )}
        <span className="log-txt">{body}</span>
        {fold && (
          <span className="log-step-meta" data-testid={`log-step-${fold.name}`}>
            {fold.status && <span aria-hidden="true">{statusIcon(fold.status)} </span>}
            {fold.title && <strong>{fold.title}</strong>}
            {fold.title && fold.meta && ' · '}
            {fold.meta}
          </span>
        )}
      </div>
    );
  },
  (a, b) =>
    a.index === b.index &&
    a.pos === b.pos &&
    a.fold?.folded === b.fold?.folded &&
    a.fold?.meta === b.fold?.meta &&
    a.fold?.title === b.fold?.title &&
    a.fold?.status === b.fold?.status &&
    a.line === b.line &&
    a.start === b.start &&
    a.focused === b.focused &&
    a.mFrom === b.mFrom &&
    a.mTo === b.mTo &&
    (a.mTo === a.mFrom || (a.matches === b.matches && (a.current === b.current || ((a.current < a.mFrom || a.current >= a.mTo) && (b.current < b.mFrom || b.current >= b.mTo))))),
);
