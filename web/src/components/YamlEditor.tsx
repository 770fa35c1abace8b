// A plain-text YAML editor: a <textarea> (so typing, undo, selection, IME and screen readers
// behave as the browser makes them) over a layer that draws line numbers, the text in colour
// (the textarea's own text is transparent, its caret and selection show), lint markers and the
// problem's message after the line. Only the lines in view are drawn. Lines never wrap, so a
// line of text is always one row of LINE_HEIGHT px.
import { forwardRef, useCallback, useEffect, useImperativeHandle, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { lineOf, offsetOf, type LineMark } from '../lib/lint';
import { visibleRange } from '../lib/virtual';
import { blockScalarLines, highlightLine } from '../lib/yamlHighlight';

export const LINE_HEIGHT = 20;
const PAD = 8;
/** The textarea's left padding: the coloured text starts where its text does. */
const PAD_X = 12;
const TAB = '  ';

export interface YamlEditorHandle {
  /** Puts the cursor at a 1-based line and column and scrolls it into view. */
  jumpTo: (line: number, column?: number) => void;
  focus: () => void;
}

export interface YamlEditorProps {
  value: string;
  onChange: (v: string) => void;
  marks: Map<number, LineMark>;
  label: string;
  readOnly?: boolean;
  /** CSS height of the editor. */
  height?: string;
  describedBy?: string;
  onCursor?: (line: number, column: number) => void;
}

export const YamlEditor = forwardRef<YamlEditorHandle, YamlEditorProps>(function YamlEditor({ value, onChange, marks, label, readOnly, height = '460px', describedBy, onCursor }, ref) {
  const ta = useRef<HTMLTextAreaElement>(null);
  const [scroll, setScroll] = useState({ top: 0, left: 0, height: 400 });
  const [charWidth, setCharWidth] = useState(7.8);
  const [cursorLine, setCursorLine] = useState(1);
  const frame = useRef(0);
  const escaped = useRef(false);
  const lines = useMemo(() => value.split('\n'), [value]);
  const inBlock = useMemo(() => blockScalarLines(lines), [lines]);

  const measure = useCallback(() => {
    cancelAnimationFrame(frame.current);
    frame.current = requestAnimationFrame(() => {
      const el = ta.current;
      if (el) setScroll((s) => (s.top === el.scrollTop && s.left === el.scrollLeft && s.height === el.clientHeight ? s : { top: el.scrollTop, left: el.scrollLeft, height: el.clientHeight }));
    });
  }, []);

  useLayoutEffect(() => {
    const el = ta.current;
    if (!el) return;
    // The width of one character of the editor's font, to place messages after a line's end.
    const ctx = document.createElement('canvas').getContext('2d');
    if (ctx) {
      const cs = getComputedStyle(el);
      ctx.font = `${cs.fontSize} ${cs.fontFamily}`;
      const w = ctx.measureText('0123456789').width / 10;
      if (w > 0) setCharWidth(w);
    }
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => {
      ro.disconnect();
      cancelAnimationFrame(frame.current);
    };
  }, [measure]);

  const reportCursor = () => {
    const el = ta.current;
    if (!el) return;
    const line = lineOf(el.value, el.selectionStart);
    const col = el.selectionStart - (el.value.lastIndexOf('\n', el.selectionStart - 1) + 1) + 1;
    setCursorLine(line);
    onCursor?.(line, col);
  };

  useImperativeHandle(ref, () => ({
    jumpTo(line, column = 1) {
      const el = ta.current;
      if (!el) return;
      const off = offsetOf(el.value, line, column);
      el.focus();
      el.setSelectionRange(off, off);
      const y = (line - 1) * LINE_HEIGHT;
      if (y < el.scrollTop || y + LINE_HEIGHT > el.scrollTop + el.clientHeight - 2 * PAD) el.scrollTop = Math.max(0, y - el.clientHeight / 3);
      el.scrollLeft = 0;
      measure();
      reportCursor();
    },
    focus() {
      ta.current?.focus();
    },
  }));

  // Typing keeps the browser's undo history: text goes in with insertText where supported.
  const insert = (text: string) => {
    const el = ta.current!;
    if (!document.execCommand?.('insertText', false, text)) {
      el.setRangeText(text, el.selectionStart, el.selectionEnd, 'end');
      onChange(el.value);
    }
  };

  const onKeyDown = (e: KeyboardEvent<HTMLTextAreaElement>) => {
    if (readOnly) return;
    const el = e.currentTarget;
    if (e.key === 'Escape') {
      // Escape, then Tab, leaves the editor: Tab alone indents.
      escaped.current = true;
      return;
    }
    if (e.key === 'Tab' && !e.ctrlKey && !e.altKey && !e.metaKey) {
      if (escaped.current) {
        escaped.current = false;
        return;
      }
      e.preventDefault();
      const start = el.value.lastIndexOf('\n', el.selectionStart - 1) + 1;
      if (e.shiftKey) {
        const lead = /^ {1,2}/.exec(el.value.slice(start))?.[0].length ?? 0;
        if (lead) {
          const caret = el.selectionStart;
          el.setSelectionRange(start, start + lead);
          insert('');
          el.setSelectionRange(Math.max(start, caret - lead), Math.max(start, caret - lead));
        }
      } else {
        insert(TAB);
      }
      return;
    }
    escaped.current = false;
    if (e.key === 'Enter' && !e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey && !e.nativeEvent.isComposing) {
      // Keep the indentation, one level more after "key:" or "- key:".
      const start = el.value.lastIndexOf('\n', el.selectionStart - 1) + 1;
      const before = el.value.slice(start, el.selectionStart);
      const indent = /^\s*(- )?/.exec(before)?.[0].replace('- ', '  ') ?? '';
      const more = /:\s*$/.test(before) ? TAB : '';
      e.preventDefault();
      insert('\n' + indent + more);
    }
  };

  const { start, end } = visibleRange(scroll.top - PAD, scroll.height, LINE_HEIGHT, lines.length, 4);
  const rows = [];
  for (let i = start; i < end; i++) {
    const n = i + 1;
    const mark = marks.get(n);
    rows.push(
      <div
        key={n}
        className={`code-line${mark ? ` code-line-${mark.severity}` : ''}${n === cursorLine ? ' code-line-current' : ''}`}
        style={{ transform: `translateY(${PAD + i * LINE_HEIGHT - scroll.top}px)` }}
      >
        <span className="code-text" style={{ left: PAD_X - scroll.left }}>
          {highlightLine(lines[i], inBlock[i]).map((t, k) => (t.kind === 'plain' ? t.text : <span key={k} className={`tk-${t.kind}`}>{t.text}</span>))}
        </span>
        {mark && (
          <span className="code-lens" style={{ left: PAD + (expandedLength(lines[i]) + 3) * charWidth - scroll.left }}>
            {mark.issues[0].message}
            {mark.issues.length > 1 ? ` (+${mark.issues.length - 1} more)` : ''}
          </span>
        )}
      </div>,
    );
  }
  const gutter = [];
  for (let i = start; i < end; i++) {
    const n = i + 1;
    const mark = marks.get(n);
    gutter.push(
      <div
        key={n}
        className={`code-ln${mark ? ` code-ln-${mark.severity}` : ''}${n === cursorLine ? ' code-ln-current' : ''}`}
        style={{ transform: `translateY(${PAD + i * LINE_HEIGHT - scroll.top}px)` }}
        title={mark ? mark.issues.map((x) => `${x.severity}: ${x.field ? x.field + ': ' : ''}${x.message}`).join('\n') : undefined}
        data-line={n}
        data-severity={mark?.severity}
      >
        {mark && <span className="code-marker" aria-hidden="true" />}
        {n}
      </div>,
    );
  }

  useEffect(() => measure(), [value, measure]);

  return (
    <div className="code-editor" style={{ height }}>
      <div className="code-gutter" aria-hidden="true" style={{ width: `${Math.max(3, String(lines.length).length) + 2.5}ch` }}>
        {gutter}
      </div>
      <div className="code-area">
        <div className="code-layer" aria-hidden="true">
          {rows}
        </div>
        <textarea
          ref={ta}
          className="code-input code-input-hl"
          value={value}
          onChange={(e) => {
            onChange(e.target.value);
            reportCursor();
          }}
          onScroll={measure}
          onKeyDown={onKeyDown}
          onKeyUp={reportCursor}
          onClick={reportCursor}
          onSelect={reportCursor}
          wrap="off"
          spellCheck={false}
          autoCapitalize="off"
          autoComplete="off"
          autoCorrect="off"
          aria-label={label}
          aria-describedby={describedBy}
          aria-multiline="true"
          readOnly={readOnly}
          data-testid="yaml-editor"
        />
      </div>
    </div>
  );
});

/** A line's width in characters, with tabs at 2 (the editor's tab-size). */
function expandedLength(line: string): number {
  let n = 0;
  for (const c of line) n += c === '\t' ? 2 - (n % 2) : 1;
  return n;
}
