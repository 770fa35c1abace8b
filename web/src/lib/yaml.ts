// A Kubernetes object as YAML for reading (the node panel's manifests): block style, keys in
// their order, strings quoted only when YAML would read them as something else.

const PLAIN = /^[A-Za-z0-9_./@()+-][A-Za-z0-9_./@()+ :=,-]*$/;
const SPECIAL = /^(true|false|yes|no|on|off|null|~|y|n|[-+]?(\d[\d_]*(\.\d*)?([eE][-+]?\d+)?|\.inf|\.nan|0x[0-9a-fA-F]+|0o[0-7]+))$/i;

function scalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  const s = String(v);
  if (s !== '' && PLAIN.test(s) && !SPECIAL.test(s) && !s.endsWith(':') && !s.includes(': ') && !s.includes(' #') && !s.endsWith(' ')) return s;
  return JSON.stringify(s);
}

function key(k: string): string {
  return PLAIN.test(k) && !SPECIAL.test(k) && !k.includes(': ') ? k : JSON.stringify(k);
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function block(v: unknown, indent: string, out: string[]): void {
  if (Array.isArray(v)) {
    for (const item of v) {
      if ((isObj(item) && Object.keys(item).length) || (Array.isArray(item) && item.length)) {
        const sub: string[] = [];
        block(item, indent + '  ', sub);
        out.push(indent + '- ' + sub[0].slice(indent.length + 2), ...sub.slice(1));
      } else {
        out.push(indent + '- ' + inline(item));
      }
    }
    return;
  }
  if (isObj(v)) {
    for (const [k, val] of Object.entries(v)) {
      if ((isObj(val) && Object.keys(val).length) || (Array.isArray(val) && val.length)) {
        out.push(`${indent}${key(k)}:`);
        block(val, Array.isArray(val) ? indent : indent + '  ', out);
      } else if (typeof val === 'string' && val.includes('\n')) {
        out.push(`${indent}${key(k)}: |${val.endsWith('\n') ? '' : '-'}`);
        for (const line of val.replace(/\n$/, '').split('\n')) out.push(line ? `${indent}  ${line}` : '');
      } else {
        out.push(`${indent}${key(k)}: ${inline(val)}`);
      }
    }
  }
}

function inline(v: unknown): string {
  if (Array.isArray(v)) return '[]';
  if (isObj(v)) return '{}';
  return scalar(v);
}

/** v as YAML text (ends with a newline). */
export function toYaml(v: unknown): string {
  if (!isObj(v) && !Array.isArray(v)) return inline(v) + '\n';
  const out: string[] = [];
  block(v, '', out);
  return out.join('\n') + '\n';
}
