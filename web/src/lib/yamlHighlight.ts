// Colours for the YAML editor: a line at a time, cheap enough to run on every keystroke for the
// lines in view. Each token is a class name (keys, strings, numbers and booleans, comments,
// punctuation, anchors and tags, ${{VARIABLES}}); the text is only ever rendered as text.

export type TokenKind = 'key' | 'str' | 'lit' | 'com' | 'punct' | 'anchor' | 'var' | 'plain';

export interface Token {
  text: string;
  kind: TokenKind;
}

const BLOCK_HEADER = /(?:^|[\s:-])[|>][+-]?[1-9]?[+-]?\s*(?:#.*)?$/;

/**
 * For each line, whether it is inside a block scalar (the text under "key: |"), which is
 * coloured as a string whatever it looks like.
 */
export function blockScalarLines(lines: string[]): boolean[] {
  const out = new Array<boolean>(lines.length).fill(false);
  let parent = -1;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const body = l.trimStart();
    const indent = l.length - body.length;
    if (parent >= 0) {
      if (body === '' || indent > parent) {
        out[i] = true;
        continue;
      }
      parent = -1;
    }
    if (body && !body.startsWith('#') && /:\s|^-\s|^-$/.test(body + ' ') && BLOCK_HEADER.test(body)) {
      // The content must be indented more than the key; "- key: |" puts the key after "- ".
      parent = indent + (/^(-\s+)+/.exec(body)?.[0].length ?? 0);
    }
  }
  return out;
}

const LIT = /^(?:true|false|True|False|TRUE|FALSE|null|Null|NULL|~|[-+]?(?:\d+|\d*\.\d+)(?:[eE][-+]?\d+)?|0x[0-9a-fA-F]+|\.inf|\.nan)$/;

/** Splits text on ${{NAME}} so variables stand out inside strings and plain values. */
function withVars(text: string, kind: TokenKind, out: Token[]) {
  const re = /\$\{\{[^}]*\}\}/g;
  let at = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m.index > at) out.push({ text: text.slice(at, m.index), kind });
    out.push({ text: m[0], kind: 'var' });
    at = m.index + m[0].length;
  }
  if (at < text.length) out.push({ text: text.slice(at), kind });
}

function quotedEnd(s: string, i: number): number {
  const q = s[i];
  for (let j = i + 1; j < s.length; j++) {
    if (q === '"' && s[j] === '\\') j++;
    else if (s[j] === q) {
      if (q === "'" && s[j + 1] === "'") j++;
      else return j + 1;
    }
  }
  return s.length;
}

/** A value: after "key:", "- " or inside […]/{…}. */
function value(s: string, out: Token[], flow: boolean) {
  let i = 0;
  while (i < s.length) {
    const c = s[i];
    if (c === ' ' || c === '\t') {
      let j = i;
      while (s[j] === ' ' || s[j] === '\t') j++;
      if (s[j] === '#') {
        out.push({ text: s.slice(i, j), kind: 'plain' }, { text: s.slice(j), kind: 'com' });
        return;
      }
      out.push({ text: s.slice(i, j), kind: 'plain' });
      i = j;
      continue;
    }
    if (c === '#' && i === 0) {
      out.push({ text: s.slice(i), kind: 'com' });
      return;
    }
    if (c === '"' || c === "'") {
      const e = quotedEnd(s, i);
      withVars(s.slice(i, e), 'str', out);
      i = e;
      continue;
    }
    if (c === '&' || c === '*' || c === '!') {
      let j = i + 1;
      while (j < s.length && !/[\s,[\]{}]/.test(s[j])) j++;
      out.push({ text: s.slice(i, j), kind: 'anchor' });
      i = j;
      continue;
    }
    if ('[]{},'.includes(c)) {
      out.push({ text: c, kind: 'punct' });
      i++;
      flow = true;
      continue;
    }
    if (!flow && (c === '|' || c === '>') && /^[|>][+-]?[1-9]?[+-]?\s*(#.*)?$/.test(s.slice(i))) {
      const m = /^[|>][+-]?[1-9]?[+-]?/.exec(s.slice(i))![0];
      out.push({ text: m, kind: 'punct' });
      i += m.length;
      continue;
    }
    // A plain word: up to a comment, or in flow up to a bracket or comma.
    let j = i;
    while (j < s.length && !(flow && /[,[\]{}]/.test(s[j])) && !((s[j] === ' ' || s[j] === '\t') && s[j + 1] === '#')) {
      if (flow && s[j] === ':' && (s[j + 1] === ' ' || s[j + 1] === undefined)) break;
      j++;
    }
    if (flow && s[j] === ':' && j > i) {
      out.push({ text: s.slice(i, j), kind: 'key' }, { text: ':', kind: 'punct' });
      i = j + 1;
      continue;
    }
    const word = s.slice(i, j);
    const trimmed = word.trimEnd();
    if (trimmed) withVars(trimmed, LIT.test(trimmed) ? 'lit' : 'plain', out);
    if (word.length > trimmed.length) out.push({ text: word.slice(trimmed.length), kind: 'plain' });
    if (j === i) {
      out.push({ text: s[i], kind: 'plain' });
      j++;
    }
    i = j;
  }
}

const KEY = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^\s#'"[\]{},&*!|>%@`-][^#]*?|-[^\s#][^#]*?)(\s*)(:)(?=\s|$)/;

/** The tokens of one line; their texts joined give the line back. */
export function highlightLine(line: string, inBlockScalar: boolean): Token[] {
  const out: Token[] = [];
  if (inBlockScalar) {
    withVars(line, 'str', out);
    return out;
  }
  let i = 0;
  while (line[i] === ' ' || line[i] === '\t') i++;
  if (i) out.push({ text: line.slice(0, i), kind: 'plain' });
  let rest = line.slice(i);
  if (rest.startsWith('#')) {
    out.push({ text: rest, kind: 'com' });
    return out;
  }
  if (/^(---|\.\.\.)(\s|$)/.test(rest)) {
    out.push({ text: rest.slice(0, 3), kind: 'punct' });
    rest = rest.slice(3);
  }
  // "- - key: v": the dashes, then what follows.
  for (let m = /^-(\s+|$)/.exec(rest); m; m = /^-(\s+|$)/.exec(rest)) {
    out.push({ text: '-', kind: 'punct' });
    if (m[1]) out.push({ text: m[1], kind: 'plain' });
    rest = rest.slice(m[0].length);
  }
  const k = KEY.exec(rest);
  if (k) {
    out.push({ text: k[1], kind: 'key' });
    if (k[2]) out.push({ text: k[2], kind: 'plain' });
    out.push({ text: ':', kind: 'punct' });
    rest = rest.slice(k[0].length);
  }
  value(rest, out, false);
  return out;
}
