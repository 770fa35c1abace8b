// A small YAML reader for the pipeline editor's graph: block mappings and sequences, plain,
// quoted and block scalars, flow collections, comments, anchors, aliases and merge keys, with
// each node's line. It is not the parser of record (the server's is); it exists so the graph
// can follow the text as it is typed, and so a mistake is reported at its line with a message
// a person can act on. The text is data: nothing in it is ever evaluated.

export type YNode = YMap | YSeq | YScalar;

export interface YEntry {
  key: string;
  /** 1-based line and column of the key. */
  line: number;
  column: number;
  value: YNode;
}

export interface YMap {
  kind: 'map';
  line: number;
  entries: YEntry[];
}

export interface YSeq {
  kind: 'seq';
  line: number;
  items: YNode[];
}

export interface YScalar {
  kind: 'scalar';
  line: number;
  value: string;
  /** Written in quotes or as a block scalar: never null, true or a number. */
  quoted: boolean;
}

export interface YamlProblem {
  line: number;
  column: number;
  message: string;
}

export type YamlResult = { ok: true; doc: YNode | undefined } | { ok: false; error: YamlProblem };

/** Deeper than this is not a pipeline: stop before the stack does. */
const MAX_DEPTH = 64;

class YamlError extends Error {
  constructor(
    readonly line: number,
    readonly column: number,
    message: string,
  ) {
    super(message);
  }
}

interface Line {
  /** Index into the raw lines. */
  idx: number;
  indent: number;
  /** Without the indentation, a comment or trailing space. */
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
    } else if ((c === '"' || c === "'") && (i === 0 || /[\s[{,:-]/.test(s[i - 1]))) {
      quote = c;
    } else if (c === '#' && (i === 0 || s[i - 1] === ' ' || s[i - 1] === '\t')) {
      return s.slice(0, i).trimEnd();
    }
  }
  return s.trimEnd();
}

function isSeqItem(text: string): boolean {
  return text === '-' || text.startsWith('- ');
}

/** Reads a quoted scalar starting at s[0]; returns its value and the index after the closing quote, or -1 when unclosed. */
function readQuoted(s: string): [string, number] {
  const q = s[0];
  let out = '';
  for (let i = 1; i < s.length; i++) {
    const c = s[i];
    if (q === "'") {
      if (c === "'") {
        if (s[i + 1] === "'") {
          out += "'";
          i++;
        } else return [out, i + 1];
      } else out += c;
    } else if (c === '\\') {
      const n = s[++i];
      out += n === 'n' ? '\n' : n === 't' ? '\t' : (n ?? '');
    } else if (c === '"') return [out, i + 1];
    else out += c;
  }
  return [out, -1];
}

const KEY_START_BAD = /^[[\]{},#&*!|>%@`]/;

/** "key: rest" → the key, the rest and the rest's offset; undefined when the text is no mapping entry. */
function splitKey(text: string): { key: string; rest: string; restAt: number } | undefined {
  let key: string;
  let after: number;
  if (text[0] === '"' || text[0] === "'") {
    const [v, end] = readQuoted(text);
    if (end < 0) return undefined;
    let j = end;
    while (text[j] === ' ') j++;
    if (text[j] !== ':' || (j + 1 < text.length && text[j + 1] !== ' ')) return undefined;
    key = v;
    after = j + 1;
  } else {
    if (KEY_START_BAD.test(text) || isSeqItem(text)) return undefined;
    const m = /:( |$)/.exec(text);
    if (!m) return undefined;
    key = text.slice(0, m.index).trimEnd();
    if (!key) return undefined;
    after = m.index + 1;
  }
  let restAt = after;
  while (text[restAt] === ' ') restAt++;
  return { key, rest: text.slice(restAt), restAt };
}

class Parser {
  private i = 0;
  /** A line that stands for the rest of a "- key: v" item, read as if it began at its column. */
  private override: Line | undefined;
  private anchors = new Map<string, YNode>();
  private depth = 0;
  /** The lines read so far, by index: peek looks at the same line many times. */
  private lines: (Line | undefined)[] = [];
  /** Whether content has been read: a "---" after it starts a second document. */
  private started = false;
  constructor(private readonly raw: string[]) {}

  private fail(line: Line | number, column: number, message: string): never {
    throw new YamlError(typeof line === 'number' ? line : line.idx + 1, column, message);
  }

  /** The next line with content, without taking it. */
  peek(): Line | undefined {
    if (this.override) return this.override;
    for (let j = this.i; j < this.raw.length; j++) {
      const r = this.raw[j];
      const body = r.trimStart();
      if (body === '' || body.startsWith('#')) continue;
      const cached = this.lines[j];
      if (cached) return cached;
      const lead = r.slice(0, r.length - body.length);
      if (lead.includes('\t')) this.fail(j + 1, lead.indexOf('\t') + 1, 'a tab is used for indentation: indent with spaces');
      if (r.startsWith('---') && (r.length === 3 || r[3] === ' ')) {
        if (!this.started) continue;
        this.fail(j + 1, 1, 'a second document ("---") is not allowed: the spec is one document');
      }
      if (r.startsWith('%') && !this.started) continue;
      if (r === '...' || r.startsWith('... ')) return undefined;
      const text = stripComment(body);
      if (!text) continue;
      this.started = true;
      return (this.lines[j] = { idx: j, indent: lead.length, text });
    }
    return undefined;
  }

  take(l: Line) {
    if (this.override === l) this.override = undefined;
    else this.i = l.idx + 1;
  }

  document(): YNode | undefined {
    const first = this.peek();
    if (!first) return undefined;
    const n = this.node(first.indent);
    const left = this.peek();
    if (left) {
      const what = isSeqItem(left.text) ? 'a list item' : splitKey(left.text) ? `the key "${splitKey(left.text)!.key}"` : 'this line';
      this.fail(left, left.indent + 1, left.indent < first.indent ? `${what} is indented less than the first line (${first.indent} spaces)` : `${what} does not belong to anything above it: check its indentation`);
    }
    return n;
  }

  /** A block node whose first line is the next one, at `indent`. */
  node(indent: number): YNode {
    if (++this.depth > MAX_DEPTH) this.fail(this.peek()?.idx ?? 0, 1, `nested more than ${MAX_DEPTH} levels deep`);
    try {
      const l = this.peek()!;
      if (isSeqItem(l.text)) return this.seq(indent);
      if (splitKey(l.text)) return this.map(indent);
      this.take(l);
      return this.inline(l.text, l, l.indent - 1, l.indent);
    } finally {
      this.depth--;
    }
  }

  map(indent: number): YMap {
    const first = this.peek()!;
    const out: YMap = { kind: 'map', line: first.idx + 1, entries: [] };
    const seen = new Map<string, number>();
    const merges: YMap[] = [];
    for (;;) {
      const l = this.peek();
      if (!l || l.indent < indent) break;
      if (l.indent > indent) this.fail(l, l.indent + 1, `unexpected indentation: this line is indented more (${l.indent} spaces) than the key above it (${indent})`);
      if (isSeqItem(l.text)) this.fail(l, l.indent + 1, 'a list item ("- ") where a "key: value" was expected');
      const kv = splitKey(l.text);
      if (!kv) {
        if (l.text.startsWith('? ')) this.fail(l, l.indent + 1, 'complex keys ("? ") are not supported');
        this.fail(l, l.indent + 1, `expected "key: value", found "${clip(l.text)}"`);
      }
      this.take(l);
      if (kv.key !== '<<') {
        const prev = seen.get(kv.key);
        if (prev !== undefined) this.fail(l, l.indent + 1, `duplicate key "${kv.key}" (first on line ${prev})`);
        seen.set(kv.key, l.idx + 1);
      }
      const value = this.value(kv.rest, l, indent, l.indent + kv.restAt, true);
      if (kv.key === '<<') {
        const ms = value.kind === 'seq' ? value.items : [value];
        for (const m of ms) {
          if (m.kind !== 'map') this.fail(l, l.indent + 1, 'a merge key ("<<") takes a mapping or a list of mappings');
          merges.push(m);
        }
        continue;
      }
      out.entries.push({ key: kv.key, line: l.idx + 1, column: l.indent + 1, value });
    }
    for (const m of merges) {
      for (const e of m.entries) {
        if (seen.has(e.key)) continue;
        seen.set(e.key, e.line);
        out.entries.push(e);
      }
    }
    return out;
  }

  seq(indent: number): YSeq {
    const first = this.peek()!;
    const out: YSeq = { kind: 'seq', line: first.idx + 1, items: [] };
    for (;;) {
      const l = this.peek();
      if (!l || l.indent < indent) break;
      if (l.indent > indent) this.fail(l, l.indent + 1, `unexpected indentation: this line is indented more (${l.indent} spaces) than the list item above it (${indent})`);
      if (!isSeqItem(l.text)) break; // the mapping this list is a value of goes on
      this.take(l);
      const rest = l.text.slice(1).trimStart();
      const col = l.indent + (l.text.length - rest.length);
      if (rest && (isSeqItem(rest) || splitKey(rest))) {
        this.override = { idx: l.idx, indent: col, text: rest };
        this.depth++;
        try {
          out.items.push(isSeqItem(rest) ? this.seq(col) : this.map(col));
        } finally {
          this.depth--;
        }
      } else {
        out.items.push(this.value(rest, l, indent, col, false));
      }
    }
    return out;
  }

  /**
   * The value after "key:" or "- ": on the same line, or the block below it. `indent` is the
   * indentation of the key or item; `inMap` lets a list sit at the key's own indentation.
   */
  value(rest: string, l: Line, indent: number, col: number, inMap: boolean): YNode {
    let anchor: string | undefined;
    const am = /^&([^\s[\]{},]+)\s*/.exec(rest);
    if (am) {
      anchor = am[1];
      rest = rest.slice(am[0].length);
      col += am[0].length;
    }
    const tm = /^!\S*\s*/.exec(rest);
    if (tm) {
      rest = rest.slice(tm[0].length);
      col += tm[0].length;
    }
    let n: YNode;
    if (rest === '') {
      const next = this.peek();
      if (next && (next.indent > indent || (inMap && next.indent === indent && isSeqItem(next.text)))) n = this.node(next.indent);
      else n = { kind: 'scalar', line: l.idx + 1, value: '', quoted: false };
    } else if (rest[0] === '*') {
      const name = rest.slice(1);
      if (!/^[^\s[\]{},]+$/.test(name)) this.fail(l, col + 1, `"${clip(rest)}" is not an alias: write "*name"`);
      const a = this.anchors.get(name);
      if (!a) this.fail(l, col + 1, `unknown alias "*${name}": no "&${name}" above it`);
      n = a;
    } else if (rest[0] === '|' || rest[0] === '>') {
      n = this.blockScalar(rest, l, indent, col);
    } else {
      n = this.inline(rest, l, indent, col);
    }
    if (anchor) this.anchors.set(anchor, n);
    return n;
  }

  blockScalar(header: string, l: Line, indent: number, col: number): YScalar {
    const m = /^([|>])([+-]?)([1-9]?)([+-]?)$/.exec(header);
    if (!m) this.fail(l, col + 1, `"${clip(header)}" after "${header[0]}": a block scalar header is "${header[0]}", "${header[0]}-" or "${header[0]}+"`);
    const lines: string[] = [];
    let want = m[3] ? indent + Number(m[3]) : -1;
    let j = l.idx + 1;
    for (; j < this.raw.length; j++) {
      const r = this.raw[j];
      if (r.trim() === '') {
        lines.push('');
        continue;
      }
      const ind = r.length - r.trimStart().length;
      if (want < 0) {
        if (ind <= indent) break;
        want = ind;
      }
      if (ind < want) break;
      lines.push(r.slice(want));
    }
    while (lines.length && lines[lines.length - 1] === '') lines.pop();
    this.i = j;
    return { kind: 'scalar', line: l.idx + 1, value: lines.join(m[1] === '|' ? '\n' : ' '), quoted: true };
  }

  /** A scalar or flow collection that starts on this line (and may go on below). */
  inline(rest: string, l: Line, indent: number, col: number): YNode {
    const c = rest[0];
    if (c === '[' || c === '{') {
      let text = rest;
      let last = l;
      // A flow collection may go on over the next lines until its brackets close.
      while (!flowClosed(text)) {
        const next = this.peek();
        if (!next || next.indent <= indent) this.fail(l, col + 1, `"${c}" is never closed with "${c === '[' ? ']' : '}'}"`);
        this.take(next);
        text += ' ' + next.text;
        last = next;
      }
      const f = new Flow(text, l.idx + 1, col);
      const v = f.value();
      f.end(last === l ? undefined : last.idx + 1);
      return v;
    }
    if (c === '"' || c === "'") {
      let text = rest;
      let [v, end] = readQuoted(text);
      while (end < 0) {
        const j = this.i;
        if (j >= this.raw.length) this.fail(l, col + 1, `the string opened with ${c} is never closed`);
        text += ' ' + this.raw[j].trim();
        this.i = j + 1;
        [v, end] = readQuoted(text);
      }
      const after = text.slice(end).trim();
      if (after) {
        if (after.startsWith(':')) this.fail(l, col + end + 1, 'a key cannot be written here: put it on its own line');
        this.fail(l, col + end + 1, `unexpected "${clip(after)}" after the closing quote`);
      }
      return { kind: 'scalar', line: l.idx + 1, value: v, quoted: true };
    }
    if (c === '@' || c === '`') this.fail(l, col + 1, `a plain value cannot start with "${c}": quote it`);
    const colon = /: |:$/.exec(rest);
    if (colon) this.fail(l, col + colon.index + 1, `"${clip(rest)}": a value cannot contain ": " — quote it, or put the key on its own line`);
    let text = rest;
    // A plain scalar goes on over more-indented lines below it.
    for (;;) {
      const next = this.peek();
      if (!next || next.indent <= indent) break;
      if (/: |:$/.test(next.text)) this.fail(next, next.indent + 1, `this line is indented more than the line above it (${next.indent} spaces), so it would be part of that value: check its indentation`);
      this.take(next);
      text += ' ' + next.text;
    }
    return { kind: 'scalar', line: l.idx + 1, value: text, quoted: false };
  }
}

function flowClosed(s: string): boolean {
  let depth = 0;
  let quote = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = '';
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
  }
  return depth <= 0;
}

/** A flow collection: [a, b] and {k: v}, nested. */
class Flow {
  private p = 0;
  constructor(
    private readonly s: string,
    private readonly line: number,
    private readonly col: number,
  ) {}

  private fail(msg: string): never {
    throw new YamlError(this.line, this.col + this.p + 1, msg);
  }

  private ws() {
    while (this.s[this.p] === ' ') this.p++;
  }

  end(lastLine?: number) {
    this.ws();
    if (this.p < this.s.length) {
      if (lastLine !== undefined) throw new YamlError(lastLine, 1, `unexpected "${clip(this.s.slice(this.p))}" after the closing bracket`);
      this.fail(`unexpected "${clip(this.s.slice(this.p))}" after the closing bracket`);
    }
  }

  value(depth = 0): YNode {
    if (depth > MAX_DEPTH) this.fail(`nested more than ${MAX_DEPTH} levels deep`);
    this.ws();
    const c = this.s[this.p];
    if (c === '[') {
      this.p++;
      const out: YSeq = { kind: 'seq', line: this.line, items: [] };
      for (;;) {
        this.ws();
        if (this.s[this.p] === ']') {
          this.p++;
          return out;
        }
        out.items.push(this.value(depth + 1));
        this.ws();
        if (this.s[this.p] === ',') this.p++;
        else if (this.s[this.p] !== ']') this.fail(this.p >= this.s.length ? '"[" is never closed with "]"' : `expected "," or "]", found "${this.s[this.p]}"`);
      }
    }
    if (c === '{') {
      this.p++;
      const out: YMap = { kind: 'map', line: this.line, entries: [] };
      for (;;) {
        this.ws();
        if (this.s[this.p] === '}') {
          this.p++;
          return out;
        }
        const at = this.p;
        const k = this.value(depth + 1);
        if (k.kind !== 'scalar') this.fail('a key in "{…}" must be a plain or quoted word');
        this.ws();
        let v: YNode = { kind: 'scalar', line: this.line, value: '', quoted: false };
        if (this.s[this.p] === ':') {
          this.p++;
          this.ws();
          if (this.s[this.p] !== ',' && this.s[this.p] !== '}') v = this.value(depth + 1);
        }
        if (out.entries.some((e) => e.key === k.value)) {
          this.p = at;
          this.fail(`duplicate key "${k.value}"`);
        }
        out.entries.push({ key: k.value, line: this.line, column: this.col + at + 1, value: v });
        this.ws();
        if (this.s[this.p] === ',') this.p++;
        else if (this.s[this.p] !== '}') this.fail(this.p >= this.s.length ? '"{" is never closed with "}"' : `expected "," or "}", found "${this.s[this.p]}"`);
      }
    }
    if (c === '"' || c === "'") {
      const [v, end] = readQuoted(this.s.slice(this.p));
      if (end < 0) this.fail(`the string opened with ${c} is never closed`);
      this.p += end;
      return { kind: 'scalar', line: this.line, value: v, quoted: true };
    }
    if (c === undefined) this.fail('a value is missing before the end of the line');
    if (c === ']' || c === '}' || c === ',') this.fail(`unexpected "${c}"`);
    const start = this.p;
    while (this.p < this.s.length && !/[,\]}]/.test(this.s[this.p]) && !(this.s[this.p] === ':' && /[\s,\]}]|^$/.test(this.s[this.p + 1] ?? ''))) this.p++;
    return { kind: 'scalar', line: this.line, value: this.s.slice(start, this.p).trim(), quoted: false };
  }
}

function clip(s: string): string {
  return s.length > 40 ? s.slice(0, 39) + '…' : s;
}

/** Parses one YAML document; the first problem, with its line and column, when it cannot. */
export function parseYaml(text: string): YamlResult {
  const p = new Parser(text.split(/\r?\n/));
  try {
    return { ok: true, doc: p.document() };
  } catch (e) {
    if (e instanceof YamlError) return { ok: false, error: { line: e.line, column: e.column, message: e.message } };
    throw e;
  }
}

/** A node as plain data (for tests and callers that want values): null, booleans and numbers as YAML 1.2 core reads them. */
export function toJS(n: YNode | undefined): unknown {
  if (!n) return null;
  if (n.kind === 'map') return Object.fromEntries(n.entries.map((e) => [e.key, toJS(e.value)]));
  if (n.kind === 'seq') return n.items.map(toJS);
  if (n.quoted) return n.value;
  const v = n.value;
  if (v === '' || v === '~' || /^(null|Null|NULL)$/.test(v)) return null;
  if (/^(true|True|TRUE)$/.test(v)) return true;
  if (/^(false|False|FALSE)$/.test(v)) return false;
  if (/^[-+]?(\d+|\d*\.\d+)([eE][-+]?\d+)?$/.test(v)) return Number(v);
  return v;
}

/** The entry of a mapping by key. */
export function get(n: YNode | undefined, key: string): YEntry | undefined {
  return n?.kind === 'map' ? n.entries.find((e) => e.key === key) : undefined;
}
