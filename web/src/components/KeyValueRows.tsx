// Rows of KEY=VALUE inputs: variables, context values, labels. Pasting several KEY=VALUE lines
// into a key field fills one row per line.
import { useId, type ClipboardEvent } from 'react';
import { parsePairs, type KVRow } from '../lib/kv';

export interface KeyValueRowsProps {
  label: string;
  rows: KVRow[];
  onChange: (rows: KVRow[]) => void;
  errors?: (string | undefined)[];
  /** Values are secrets: type=password, with a reveal toggle per row. */
  secret?: boolean;
  /** Offer an "encrypted" checkbox per row (pipeline variables). */
  encryptable?: boolean;
  keyPlaceholder?: string;
  valuePlaceholder?: string;
  addLabel?: string;
  disabled?: boolean;
  hint?: string;
}

export function KeyValueRows({ label, rows, onChange, errors = [], secret, encryptable, keyPlaceholder = 'KEY', valuePlaceholder = 'value', addLabel = 'Add variable', disabled, hint }: KeyValueRowsProps) {
  const id = useId();
  const set = (i: number, patch: Partial<KVRow>) => onChange(rows.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const remove = (i: number) => onChange(rows.length === 1 ? [{ key: '', value: '' }] : rows.filter((_, j) => j !== i));
  const paste = (i: number) => (e: ClipboardEvent<HTMLInputElement>) => {
    const text = e.clipboardData.getData('text');
    if (!text.includes('\n') && !text.includes('=')) return;
    const pairs = parsePairs(text);
    if (!pairs) return;
    e.preventDefault();
    const next = rows.slice();
    next.splice(i, 1, ...pairs.map((p) => ({ ...p, encrypted: rows[i]?.encrypted })));
    onChange(next);
  };
  return (
    <fieldset className="kv" disabled={disabled}>
      <legend>{label}</legend>
      {hint && <p className="field-hint kv-hint">{hint}</p>}
      <div className="kv-rows" role="list">
        {rows.map((r, i) => (
          <div className={errors[i] ? 'kv-row kv-row-invalid' : 'kv-row'} role="listitem" key={i}>
            <input
              type="text"
              className="kv-key"
              aria-label={`${label}: key ${i + 1}`}
              placeholder={keyPlaceholder}
              value={r.key}
              onChange={(e) => set(i, { key: e.target.value })}
              onPaste={paste(i)}
              autoComplete="off"
              spellCheck={false}
              aria-invalid={errors[i] ? true : undefined}
              aria-describedby={errors[i] ? `${id}-e${i}` : undefined}
            />
            <span className="kv-eq" aria-hidden="true">
              =
            </span>
            <input
              type={secret || r.encrypted ? 'password' : 'text'}
              className="kv-value"
              aria-label={`${label}: value ${i + 1}`}
              placeholder={valuePlaceholder}
              value={r.value}
              onChange={(e) => set(i, { value: e.target.value })}
              autoComplete={secret || r.encrypted ? 'new-password' : 'off'}
              spellCheck={false}
            />
            {encryptable && (
              <label className="kv-flag" title="Stored encrypted; shown masked">
                <input type="checkbox" checked={!!r.encrypted} onChange={(e) => set(i, { encrypted: e.target.checked })} /> encrypted
              </label>
            )}
            <button type="button" className="icon-button" aria-label={`Remove row ${i + 1} of ${label}`} title="Remove" onClick={() => remove(i)}>
              ×
            </button>
            {errors[i] && (
              <div className="field-error kv-error" id={`${id}-e${i}`}>
                {errors[i]}
              </div>
            )}
          </div>
        ))}
      </div>
      <button type="button" className="button button-small" onClick={() => onChange([...rows, { key: '', value: '' }])}>
        + {addLabel}
      </button>
    </fieldset>
  );
}
