// A unified diff's lines with old and new line numbers (lib/diff.ts parses them), shown as
// they are (unified), side by side (split: live on the left, desired on the right) or compact
// (the changes with three lines around them, longer unchanged runs folded, each opened by a click).
import { useMemo, useState } from 'react';
import { compactLines, toSplitRows, type DiffLine, type DiffMode } from '../lib/diff';
import { plural } from '../lib/format';

/** Unchanged lines kept either side of a change in the compact view. */
export const COMPACT_CONTEXT = 3;

export function DiffLines({ lines, label, mode = 'unified' }: { lines: DiffLine[]; label: string; mode?: DiffMode }) {
  if (mode === 'split') return <SplitLines lines={lines} label={label} />;
  if (mode === 'compact') return <CompactLines lines={lines} label={label} />;
  return (
    <div className="diff" role="table" aria-label={label} data-mode="unified">
      {lines.map((l, i) => (
        <Line key={i} l={l} />
      ))}
    </div>
  );
}

function Line({ l }: { l: DiffLine }) {
  return (
    <div className={`diff-line diff-${l.kind}`} role="row">
      <span className="diff-ln" role="cell">
        {l.old ?? ''}
      </span>
      <span className="diff-ln" role="cell">
        {l.new ?? ''}
      </span>
      <span className="diff-sign" role="cell" aria-hidden="true">
        {sign(l)}
      </span>
      <span className="diff-text" role="cell">
        {l.text}
      </span>
    </div>
  );
}

function sign(l: DiffLine): string {
  return l.kind === 'add' ? '+' : l.kind === 'del' ? '−' : ' ';
}

function CompactLines({ lines, label }: { lines: DiffLine[]; label: string }) {
  const items = useMemo(() => compactLines(lines, COMPACT_CONTEXT), [lines]);
  // The folds opened, by where they start (stable while the lines are the same).
  const [open, setOpen] = useState<Set<number>>(() => new Set());
  return (
    <div className="diff" role="table" aria-label={label} data-mode="compact">
      {items.flatMap((x, i) => {
        if (x.kind !== 'fold') return [<Line key={i} l={x} />];
        if (open.has(x.start)) return x.lines.map((l, k) => <Line key={`${i}-${k}`} l={l} />);
        const n = plural(x.lines.length, 'unchanged line');
        return [
          <div key={i} className="diff-line diff-fold" role="row">
            <span role="cell" className="diff-fold-cell">
              <button type="button" className="link-button diff-fold-button" aria-label={`Show ${n}`} data-testid="diff-fold" onClick={() => setOpen((s) => new Set(s).add(x.start))}>
                <span aria-hidden="true">⋯ </span>
                {n}
              </button>
            </span>
          </div>,
        ];
      })}
    </div>
  );
}

function SplitLines({ lines, label }: { lines: DiffLine[]; label: string }) {
  const rows = useMemo(() => toSplitRows(lines), [lines]);
  return (
    <div className="diff diff-split" role="table" aria-label={label} data-mode="split">
      <div className="visually-hidden" role="row">
        <span role="columnheader">Live line</span>
        <span role="columnheader">Live</span>
        <span role="columnheader">Desired line</span>
        <span role="columnheader">Desired</span>
      </div>
      {rows.map((r, i) =>
        r.kind === 'full' ? (
          <div key={i} className={`diff-line diff-${r.line.kind}`} role="row">
            <span className="diff-text diff-full" role="cell">
              {r.line.text}
            </span>
          </div>
        ) : (
          <div key={i} className="diff-line" role="row">
            <Side l={r.left} n={r.left?.old} />
            <Side l={r.right} n={r.right?.new} />
          </div>
        ),
      )}
    </div>
  );
}

function Side({ l, n }: { l?: DiffLine; n?: number }) {
  const kind = l ? `diff-${l.kind}` : 'diff-none';
  return (
    <>
      <span className={`diff-ln ${kind}`} role="cell">
        {n ?? ''}
      </span>
      <span className={`diff-text ${kind}`} role="cell">
        {l && l.kind !== 'context' && (
          <span className="diff-sign" aria-hidden="true">
            {sign(l)}{' '}
          </span>
        )}
        {l?.text ?? ''}
      </span>
    </>
  );
}
