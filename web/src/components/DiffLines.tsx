// A unified diff's lines with old and new line numbers (lib/diff.ts parses them).
import type { DiffLine } from '../lib/diff';

export function DiffLines({ lines, label }: { lines: DiffLine[]; label: string }) {
  return (
    <div className="diff" role="table" aria-label={label}>
      {lines.map((l, i) => (
        <div key={i} className={`diff-line diff-${l.kind}`} role="row">
          <span className="diff-ln" role="cell">
            {l.old ?? ''}
          </span>
          <span className="diff-ln" role="cell">
            {l.new ?? ''}
          </span>
          <span className="diff-sign" role="cell" aria-hidden="true">
            {l.kind === 'add' ? '+' : l.kind === 'del' ? '−' : ' '}
          </span>
          <span className="diff-text" role="cell">
            {l.text}
          </span>
        </div>
      ))}
    </div>
  );
}
