import { describe, expect, it } from 'vitest';
import { blockScalarLines, highlightLine, type Token } from './yamlHighlight';

const kinds = (ts: Token[]) => ts.filter((t) => t.text.trim()).map((t) => `${t.kind}:${t.text.trim()}`);

describe('highlightLine', () => {
  it('colours keys, punctuation, strings, literals, comments, anchors and variables', () => {
    expect(kinds(highlightLine('  image: golang:1.26  # toolchain', false))).toEqual(['key:image', 'punct::', 'plain:golang:1.26', 'com:# toolchain']);
    // A quote inside a plain value is only a character, as YAML reads it.
    expect(kinds(highlightLine('    - echo "v ${{CF_BRANCH}}"', false))).toEqual(['punct:-', 'plain:echo "v', 'var:${{CF_BRANCH}}', 'plain:"']);
    expect(kinds(highlightLine('    - "v ${{CF_BRANCH}}"', false))).toEqual(['punct:-', 'str:"v', 'var:${{CF_BRANCH}}', 'str:"']);
    expect(kinds(highlightLine('fail_fast: false', false))).toEqual(['key:fail_fast', 'punct::', 'lit:false']);
    expect(kinds(highlightLine('stages: [build, "my test"]', false))).toEqual(['key:stages', 'punct::', 'punct:[', 'plain:build', 'punct:,', 'str:"my test"', 'punct:]']);
    expect(kinds(highlightLine('retry: {maxAttempts: 2}', false))).toEqual(['key:retry', 'punct::', 'punct:{', 'key:maxAttempts', 'punct::', 'lit:2', 'punct:}']);
    expect(kinds(highlightLine('base: &base', false))).toEqual(['key:base', 'punct::', 'anchor:&base']);
    expect(kinds(highlightLine("'quoted key': |-", false))).toEqual(["key:'quoted key'", 'punct::', 'punct:|-']);
    expect(kinds(highlightLine('# all comment', false))).toEqual(['com:# all comment']);
    expect(kinds(highlightLine('url: http://x/#frag', false))).toEqual(['key:url', 'punct::', 'plain:http://x/#frag']);
  });

  it('gives the line back when its tokens are joined', () => {
    for (const l of ['', '   ', '- - a: b # c', "x: 'it''s' # y", 'k: [a, {b: c}, "d]"]', 'a:b', '  - |', '\tx: 1', 'k: ${{A}}x${{B}}', '---', 'a: "unclosed']) {
      expect(highlightLine(l, false).map((t) => t.text).join('')).toBe(l);
      expect(highlightLine(l, true).map((t) => t.text).join('')).toBe(l);
    }
  });
});

describe('blockScalarLines', () => {
  it('marks the text under "key: |" up to the first line indented as little as the key', () => {
    const lines = ['steps:', '  a:', '    commands: |', '      echo a: b', '', '      # not a comment', '    image: x', '  - run: >-', '      folded', '    next: 1'];
    expect(blockScalarLines(lines)).toEqual([false, false, false, true, true, true, false, false, true, false]);
  });
});
