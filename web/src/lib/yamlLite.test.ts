import { describe, expect, it } from 'vitest';
import { parseYaml, toJS } from './yamlLite';

function js(text: string): unknown {
  const r = parseYaml(text);
  if (!r.ok) throw new Error(`line ${r.error.line}: ${r.error.message}`);
  return toJS(r.doc);
}

function err(text: string) {
  const r = parseYaml(text);
  if (r.ok) throw new Error('parsed: ' + JSON.stringify(toJS(r.doc)));
  return r.error;
}

describe('parseYaml', () => {
  it('reads block mappings, lists, scalars and comments', () => {
    expect(
      js(`# a pipeline
version: '1.0'
stages: [build, 'my test']
steps:
  build:
    image: golang:1.26   # the toolchain
    commands:
      - go build ./...
      - "echo \\"done\\" # not a comment"
    retry: {maxAttempts: 2, delay: 5}
    on: true
    n: 3
    nothing:
list:
- a
- b: 1
  c: 2
- - x
  - y
`),
    ).toEqual({
      version: '1.0',
      stages: ['build', 'my test'],
      steps: { build: { image: 'golang:1.26', commands: ['go build ./...', 'echo "done" # not a comment'], retry: { maxAttempts: 2, delay: 5 }, on: true, n: 3, nothing: null } },
      list: ['a', { b: 1, c: 2 }, ['x', 'y']],
    });
  });

  it('reads block scalars, multi-line flow and plain scalars, quotes with apostrophes', () => {
    expect(
      js(`a: |
  line 1

  line 3
b: >-
  folded
  text
c: [one,
  two]
d: it's fine
e: plain
  goes on
f: 'it''s'
g: http://example.com/a#frag
`),
    ).toEqual({ a: 'line 1\n\nline 3', b: 'folded text', c: ['one', 'two'], d: "it's fine", e: 'plain goes on', f: "it's", g: 'http://example.com/a#frag' });
  });

  it('follows anchors, aliases and merge keys; explicit keys win over merged ones', () => {
    expect(
      js(`base: &base
  image: alpine
  shell: sh
steps:
  a:
    <<: *base
    image: busybox
  b: *base
`),
    ).toEqual({ base: { image: 'alpine', shell: 'sh' }, steps: { a: { image: 'busybox', shell: 'sh' }, b: { image: 'alpine', shell: 'sh' } } });
  });

  it('gives an empty document as undefined and a line per node', () => {
    const r = parseYaml('# only a comment\n\n');
    expect(r).toEqual({ ok: true, doc: undefined });
    const d = parseYaml('a:\n  b: 1\n');
    expect(d.ok && d.doc?.kind === 'map' && d.doc.entries[0].value.kind === 'map' && d.doc.entries[0].value.entries[0].line).toBe(2);
  });

  it.each([
    ['steps:\n  a:\n    image: x\n     commands: y\n', 4, /indented more/],
    ['a: 1\n  b: 2\n', 2, /indented more/],
    ['a: 1\na: 2\n', 2, /duplicate key "a" \(first on line 1\)/],
    ['a: b: c\n', 1, /cannot contain ": "/],
    ['a: "open\nb: 1\n', 1, /never closed/],
    ['a: [1, 2\nb: 3\n', 1, /never closed/],
    ['a: {x: 1, x: 2}\n', 1, /duplicate key "x"/],
    ['a:\n\tb: 1\n', 2, /tab/],
    ['a: *nope\n', 1, /unknown alias "\*nope"/],
    ['a: 1\n---\nb: 2\n', 2, /second document/],
    ['a: 1\njust text\n', 2, /expected "key: value"/],
    ['a:\n  - x\n  b: 1\n', 3, /belong|expected/],
    ['a: |x\n  t\n', 1, /block scalar header/],
    ['a: "x" y\n', 1, /after the closing quote/],
    ['a: @x\n', 1, /cannot start with "@"/],
  ])('reports %j at line %i', (text, line, msg) => {
    const e = err(text);
    expect(e.line).toBe(line);
    expect(e.message).toMatch(msg);
  });

  it('stops at a deep nesting instead of the stack', () => {
    expect(err('a: ' + '['.repeat(200) + ']'.repeat(200)).message).toMatch(/nested/);
    let deep = '';
    for (let i = 0; i < 100; i++) deep += ' '.repeat(i) + 'k:\n';
    expect(err(deep).message).toMatch(/nested/);
  });

  it('never throws on random text: it gives a tree or a problem with a line inside the text', () => {
    // A deterministic pseudo-random generator, so a failure can be replayed.
    let seed = 42;
    const rnd = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % n;
    };
    const parts = ['a', 'b: ', '- ', ':', ' ', '  ', '\n', '"', "'", '[', ']', '{', '}', ',', '#', '&x ', '*x', '<<: ', '|', '>', '\t', '---', 'k: v', '\n  '];
    for (let i = 0; i < 2000; i++) {
      let s = '';
      const len = rnd(40);
      for (let j = 0; j < len; j++) s += parts[rnd(parts.length)];
      const r = parseYaml(s);
      if (!r.ok) {
        expect(r.error.line).toBeGreaterThanOrEqual(1);
        expect(r.error.line).toBeLessThanOrEqual(s.split('\n').length);
        expect(r.error.message).not.toBe('');
      }
    }
  });
});
