// KEY=VALUE rows: variables, context values, runner labels, run variables.

export interface KVRow {
  key: string;
  value: string;
  /** Pipeline variables only: stored encrypted, shown masked. */
  encrypted?: boolean;
}

export type KeyRule = 'variable' | 'label';

const VAR_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;
const LABEL_RE = /^[a-zA-Z0-9]([a-zA-Z0-9._/-]{0,61}[a-zA-Z0-9])?$/;

export function rowsFromMap(m?: Record<string, string> | null): KVRow[] {
  return Object.entries(m ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => ({ key, value }));
}

/** The rows as a map; rows with neither key nor value are left out. */
export function mapFromRows(rows: KVRow[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of rows) if (r.key.trim() || r.value) out[r.key.trim()] = r.value;
  return out;
}

export function isBlank(r: KVRow): boolean {
  return !r.key.trim() && !r.value;
}

/** One message per row (undefined when the row is fine), as the server would say it. */
export function validateRows(rows: KVRow[], rule: KeyRule): (string | undefined)[] {
  const seen = new Map<string, number>();
  return rows.map((r, i) => {
    if (isBlank(r)) return undefined;
    const k = r.key.trim();
    if (!k) return 'Give a key for this value.';
    if (rule === 'variable' && !VAR_RE.test(k)) return `"${k}" is not a variable name: use letters, digits and '_', not starting with a digit.`;
    if (rule === 'label' && !LABEL_RE.test(k)) return `"${k}" is not a label key: 1–63 letters, digits, '.', '/', '_' or '-', starting and ending with a letter or digit.`;
    if (rule === 'label' && r.value.length > 63) return `The value of ${k} is longer than 63 characters.`;
    const first = seen.get(k);
    if (first !== undefined) return `${k} is given twice (also row ${first + 1}).`;
    seen.set(k, i);
    return undefined;
  });
}

/**
 * Reads pasted "KEY=VALUE" lines (blank lines and # comments skipped; "export " allowed).
 * Undefined when the text is not in that form (then it is pasted as it is).
 */
export function parsePairs(text: string): KVRow[] | undefined {
  const lines = text.split(/\r?\n/).filter((l) => l.trim() && !l.trim().startsWith('#'));
  if (lines.length < 2 && !/^\s*(export\s+)?[^=\s]+=/.test(lines[0] ?? '')) return undefined;
  const rows: KVRow[] = [];
  for (const l of lines) {
    const m = /^\s*(?:export\s+)?([^=\s]+)=(.*)$/.exec(l);
    if (!m) return undefined;
    let value = m[2];
    if (value.length >= 2 && ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'")))) value = value.slice(1, -1);
    rows.push({ key: m[1], value });
  }
  return rows;
}
