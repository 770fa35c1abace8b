import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, test } from 'vitest';
import { Markdown, parseBlocks, safeHref } from './markdown';

describe('Markdown', () => {
  test('raw HTML in a README is text, never markup', () => {
    const html = renderToStaticMarkup(<Markdown source={'# Title\n<script>alert(1)</script>\n<img src=x onerror=alert(2)>\n\n`<b>code</b>`'} />);
    expect(html).not.toContain('<script');
    expect(html).not.toContain('<img');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('<code>&lt;b&gt;code&lt;/b&gt;</code>');
    expect(html).toContain('<h3>Title</h3>');
  });

  test('links keep only http(s) and fragments', () => {
    expect(safeHref('https://example.com/x')).toBe('https://example.com/x');
    expect(safeHref('javascript:alert(1)')).toBeUndefined();
    expect(safeHref(' JAVASCRIPT:alert(1)')).toBeUndefined();
    expect(safeHref('data:text/html,x')).toBeUndefined();
    expect(safeHref('//evil.example')).toBeUndefined();
    const html = renderToStaticMarkup(<Markdown source={'[ok](https://a.example) [bad](javascript:alert(1))'} />);
    expect(html).toContain('<a href="https://a.example" target="_blank" rel="noopener noreferrer">ok</a>');
    expect(html).not.toContain('href="javascript');
    expect(html).toContain('[bad](javascript:alert(1))');
  });

  test('blocks: fenced code, lists, tables, paragraphs', () => {
    const blocks = parseBlocks('intro\ntext\n\n```yaml\na: 1\n```\n- one\n- two\n\n| name | what |\n|---|---|\n| `repo` | URL |\n');
    expect(blocks.map((b) => b.kind)).toEqual(['para', 'code', 'list', 'table']);
    expect(blocks[0]).toEqual({ kind: 'para', text: 'intro text' });
    expect(blocks[1]).toEqual({ kind: 'code', text: 'a: 1' });
    expect(blocks[3]).toEqual({ kind: 'table', rows: [['name', 'what'], ['`repo`', 'URL']] });
  });
});
