// The shape of a pipeline spec for drawing a build: its declared stages and which steps are
// parallel groups of which children. A build's steps come from the API as a flat list (a group
// followed by its children), so the build page reads the nesting from the pipeline's YAML.
// This reads block-style YAML by indentation only — the server is the parser of record; when
// the text is in a form this does not follow (flow mappings, steps from merge keys), it returns
// undefined and the page shows the steps without grouping.

export interface StepNode {
  name: string;
  /** The step's stage: its own, or its parallel parent's. */
  stage?: string;
  /** Its `title:`, when the spec gives one. */
  title?: string;
  children: StepNode[];
}

export interface SpecOutline {
  stages: string[];
  steps: StepNode[];
}

interface Line {
  indent: number;
  text: string;
}

/** Removes a comment (" #…" outside quotes) and trailing space. */
export function stripComment(s: string): string {
  let quote = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === quote) {
        if (quote === "'" && s[i + 1] === "'") i++;
        else quote = '';
      } else if (c === '\\' && quote === '"') i++;
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#' && (i === 0 || s[i - 1] === ' ' || s[i - 1] === '\t')) {
      return s.slice(0, i).trimEnd();
    }
  }
  return s.trimEnd();
}

function lines(yaml: string): Line[] | undefined {
  const out: Line[] = [];
  let inBlockScalar = -1; // indent of the key that opened a | or > scalar
  for (const raw of yaml.split(/\r?\n/)) {
    const indent = raw.length - raw.trimStart().length;
    const trimmed = raw.trim();
    if (inBlockScalar >= 0) {
      if (trimmed === '' || indent > inBlockScalar) continue;
      inBlockScalar = -1;
    }
    if (trimmed === '' || trimmed.startsWith('#') || trimmed === '---') continue;
    if (trimmed === '...') break;
    if (/^\t/.test(raw)) return undefined;
    const text = stripComment(trimmed);
    if (!text) continue;
    out.push({ indent, text });
    if (/[:-]\s*[|>][+-]?\d*$/.test(text)) inBlockScalar = indent;
  }
  return out;
}

const KEY_RE = /^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^\s'"#:[\]{},&*!|>%@`-][^:#]*?|-[^\s:#][^:#]*?))\s*:(?:\s+(.*))?$/;

/** "key: value" → [key, value]; undefined when the line is not a mapping entry. */
export function keyOf(text: string): [string, string] | undefined {
  const m = KEY_RE.exec(text);
  if (!m) return undefined;
  const key = m[1] ?? (m[2] !== undefined ? m[2].replace(/''/g, "'") : m[3].trim());
  return [key, (m[4] ?? '').trim()];
}

/** The entries of the mapping whose keys sit at `indent`, from lines[from] to lines[to]. */
function entries(ls: Line[], from: number, to: number, indent: number): { key: string; value: string; from: number; to: number }[] | undefined {
  const out: { key: string; value: string; from: number; to: number }[] = [];
  for (let i = from; i < to; i++) {
    const l = ls[i];
    if (l.indent < indent) return undefined;
    if (l.indent > indent) continue;
    if (l.text === '-' || l.text.startsWith('- ')) continue; // a list written at the key's indent
    const kv = keyOf(l.text);
    if (!kv) return undefined;
    let end = i + 1;
    while (end < to && (ls[end].indent > indent || (ls[end].indent === indent && (ls[end].text === '-' || ls[end].text.startsWith('- '))))) end++;
    out.push({ key: kv[0], value: kv[1], from: i + 1, to: end });
  }
  return out;
}

function unquote(s: string): string {
  const t = s.trim();
  if (t.length >= 2 && ((t[0] === '"' && t.endsWith('"')) || (t[0] === "'" && t.endsWith("'")))) return t.slice(1, -1).replace(/''/g, "'");
  return t;
}

/** "[a, 'b c', "d"]" → ["a", "b c", "d"]. */
export function flowList(s: string): string[] | undefined {
  const t = s.trim();
  if (!t.startsWith('[') || !t.endsWith(']')) return undefined;
  const inner = t.slice(1, -1).trim();
  if (!inner) return [];
  const out: string[] = [];
  let cur = '';
  let quote = '';
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (quote) {
      if (c === quote) quote = '';
      cur += c;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur += c;
    } else if (c === ',') {
      out.push(unquote(cur));
      cur = '';
    } else cur += c;
  }
  if (cur.trim()) out.push(unquote(cur));
  return out;
}

function stepsOf(ls: Line[], from: number, to: number, depth: number, parentStage?: string): StepNode[] | undefined {
  if (from >= to || depth > 6) return from >= to ? [] : undefined;
  const es = entries(ls, from, to, ls[from].indent);
  if (!es) return undefined;
  const out: StepNode[] = [];
  for (const e of es) {
    if (e.key === '<<') return undefined; // steps merged from an anchor: not followed here
    const node: StepNode = { name: e.key, children: [] };
    if (parentStage) node.stage = parentStage;
    if (e.from < e.to) {
      const fields = entries(ls, e.from, e.to, ls[e.from].indent);
      if (!fields) return undefined;
      const type = fields.find((f) => f.key === 'type');
      const nested = fields.find((f) => f.key === 'steps');
      const stage = fields.find((f) => f.key === 'stage');
      if (stage && stage.value) node.stage = unquote(stage.value);
      const title = fields.find((f) => f.key === 'title');
      if (title && title.value && !/^[|>]/.test(title.value)) node.title = unquote(title.value);
      if (type && unquote(type.value) === 'parallel' && nested) {
        if (nested.value) return undefined; // a flow mapping
        const kids = stepsOf(ls, nested.from, nested.to, depth + 1, node.stage);
        if (!kids) return undefined;
        node.children = kids;
      }
    } else if (e.value.startsWith('{')) {
      if (/\btype\s*:\s*['"]?parallel\b/.test(e.value)) return undefined; // a parallel step written as a flow mapping
      const st = /\bstage\s*:\s*('[^']*'|"[^"]*"|[^,}]+)/.exec(e.value);
      if (st) node.stage = unquote(st[1]);
    }
    out.push(node);
  }
  return out;
}

/** Reads the stages and the step tree of a spec, or undefined when the text is not read simply. */
export function specOutline(yaml: string): SpecOutline | undefined {
  const ls = lines(yaml);
  if (!ls || ls.length === 0) return undefined;
  const root = entries(ls, 0, ls.length, ls[0].indent);
  if (!root) return undefined;
  let stages: string[] = [];
  const st = root.find((e) => e.key === 'stages');
  if (st) {
    if (st.value) stages = flowList(st.value) ?? [];
    else for (let i = st.from; i < st.to; i++) if (ls[i].text.startsWith('- ')) stages.push(unquote(ls[i].text.slice(2)));
  }
  const steps = root.find((e) => e.key === 'steps');
  if (!steps || steps.value) return undefined;
  const tree = stepsOf(ls, steps.from, steps.to, 0);
  if (!tree) return undefined;
  return { stages, steps: tree };
}

/** The steps' titles by name, from an outline (nested steps too). */
export function stepTitles(o: SpecOutline | undefined): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (ns: StepNode[]) => {
    for (const n of ns) {
      if (n.title) out.set(n.name, n.title);
      walk(n.children);
    }
  };
  if (o) walk(o.steps);
  return out;
}
