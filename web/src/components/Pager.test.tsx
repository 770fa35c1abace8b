import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { Pager } from './Pager';

const noop = () => {};
const render = (props: Partial<Parameters<typeof Pager>[0]>) =>
  renderToStaticMarkup(<Pager page={{ after: '', limit: 50, trail: [] }} count={0} onChange={noop} noun="users" one="user" {...props} />);

function button(html: string, label: string): string {
  const m = html.match(new RegExp(`<button[^>]*>${label}</button>`));
  if (!m) throw new Error(`no ${label} button in ${html}`);
  return m[0];
}

describe('Pager', () => {
  it('on a single page: counts the rows and disables both directions', () => {
    const html = render({ count: 1 });
    expect(html).toContain('1 user<');
    expect(button(html, '← Previous')).toContain('disabled');
    expect(button(html, 'Next →')).toContain('disabled');
    expect(render({ count: 7 })).toContain('7 users<');
  });

  it('with more pages: shows the range and enables the way on', () => {
    const html = render({ count: 50, nextCursor: 'c1', page: { after: 'c1', limit: 50, trail: [''] } });
    expect(html).toContain('51–100 · page 2');
    expect(button(html, '← Previous')).not.toContain('disabled');
    expect(button(html, 'Next →')).not.toContain('disabled');
  });

  it('from a shared link without history: offers the first page instead of previous', () => {
    const html = render({ count: 50, nextCursor: 'c3', page: { after: 'c2', limit: 50, trail: undefined } });
    expect(button(html, 'First page')).not.toContain('disabled');
    expect(html).not.toContain('← Previous');
    expect(html).toContain('50 rows');
  });

  it('while loading: every control waits', () => {
    const html = render({ count: 50, nextCursor: 'c1', loading: true, page: { after: 'c1', limit: 50, trail: [''] } });
    expect(button(html, 'Next →')).toContain('disabled');
    expect(button(html, '← Previous')).toContain('disabled');
    expect(html).toMatch(/<select[^>]*disabled/);
  });
});
