import { isValidElement, type ReactElement } from 'react';
import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import type { PagedList } from '../lib/usePagedList';
import { ListPager } from './Pager';
import { ResourceTable, actionsColumn, timeColumn, type ListState, type ResourceTableProps } from './ResourceTable';

interface Row {
  id: string;
  name: string;
  seen?: string;
}

const rows: Row[] = [
  { id: 'a', name: 'alpha', seen: '2026-01-02T03:04:05Z' },
  { id: 'b', name: 'beta' },
];

const idle: ListState<Row> = { data: { items: rows }, error: undefined, loading: false };

function props(list: Partial<ListState<Row>>, extra: Partial<ResourceTableProps<Row>> = {}): ResourceTableProps<Row> {
  return {
    list: { ...idle, ...list },
    placeholder: { label: 'Loading things', rows: 3 },
    empty: { title: 'No things yet', body: 'Things appear here.', action: <button type="button">Add a thing</button> },
    rowKey: (r) => r.id,
    rowProps: (r) => ({ 'data-testid': `thing-${r.name}` }),
    columns: [
      { header: 'Name', cellClassName: 'strong', cell: (r) => r.name },
      false,
      timeColumn('Seen', (r: Row) => r.seen, 'never'),
      actionsColumn((r: Row) => <button type="button">Delete {r.name}</button>),
    ],
    ...extra,
  };
}

const render = (p: ResourceTableProps<Row>) => renderToStaticMarkup(<ResourceTable {...p} />);

describe('ResourceTable', () => {
  it('before the first answer: placeholder rows, busy, with the label', () => {
    const html = render(props({ data: undefined, loading: true }));
    expect(html).toContain('class="loading-rows" role="status" aria-label="Loading things" aria-busy="true"');
    expect(html.match(/skeleton-row/g)).toHaveLength(3);
    expect(html).not.toContain('<table');
  });

  it('on an error: the error state, and "Try again" loads again', () => {
    let reloads = 0;
    const p = props({ data: { items: rows }, error: new ApiError({ code: 'permission_denied', status: 403, message: 'admins only' }), reload: () => reloads++ });
    const html = render(p);
    expect(html).toContain('role="alert"');
    expect(html).toContain('<h3>Not allowed</h3>');
    expect(html).toContain('admins only');
    expect(html).toContain('Try again');
    // Rows loaded before are not shown under an error: they may be another page's.
    expect(html).not.toContain('<table');
    const el = ResourceTable(p) as ReactElement<{ onRetry?: () => void }>;
    expect(isValidElement(el)).toBe(true);
    el.props.onRetry?.();
    expect(reloads).toBe(1);
    // Without a way to load again, no button.
    expect(render(props({ data: undefined, error: new Error('x'), reload: undefined }))).not.toContain('Try again');
  });

  it('with no rows: the empty state with its body and action', () => {
    const html = render(props({ data: { items: [] } }));
    expect(html).toContain('<div class="empty-state"><h3>No things yet</h3><div class="muted">Things appear here.</div><div class="empty-action"><button type="button">Add a thing</button></div></div>');
    expect(render(props({ data: { items: [] } }, { empty: { title: 'Nothing on this page' } }))).toBe('<div class="empty-state"><h3>Nothing on this page</h3></div>');
  });

  it('with rows: a header cell per column shown, row attributes, cell classes and tooltips', () => {
    const html = render(props({}));
    expect(html).toContain('<table class="table" aria-busy="false">');
    expect(html.match(/<th scope="col"/g)).toHaveLength(3);
    expect(html).toContain('<th scope="col" class="actions-col"><span class="visually-hidden">Actions</span></th>');
    expect(html).toContain('<tr data-testid="thing-alpha"><td class="strong">alpha</td>');
    expect(html).toMatch(/<td title="02 Jan 2026, \d\d:04:05">[^<]*ago<\/td>/);
    expect(html).toContain('<td title="—">never</td>');
    expect(html).toContain('<td class="actions-col"><button type="button">Delete beta</button></td>');
    expect(html).not.toContain('class="pager"');
    // Loading again keeps the rows, dimmed.
    expect(render(props({ loading: true }))).toContain('<table class="table" aria-busy="true">');
  });

  it('with a pager: previous and next under the rows of a paged list, not instead of them', () => {
    const list: PagedList<Row> = { data: { items: rows, nextCursor: 'c2' }, error: undefined, loading: false, reload: () => {}, page: { after: 'c1', limit: 2, trail: [''] }, go: () => {} };
    const pager = <ListPager list={list} noun="things" one="thing" />;
    const html = render(props(list, { pager }));
    // The table in its scrolling box, the pager under it.
    expect(html).toContain('<div class="table-scroll"><table class="table"');
    expect(html).toContain('</table></div><nav class="pager" aria-label="Pages of things">');
    expect(html).toContain('3–4 · page 2');
    expect(html).toMatch(/<button type="button" class="button">Next →<\/button>/);
    // An empty page, a failure or the first load have no pager.
    expect(render(props({ ...list, data: { items: [] } }, { pager }))).not.toContain('class="pager"');
    expect(render(props({ ...list, error: new Error('x') }, { pager }))).not.toContain('class="pager"');
    expect(render(props({ ...list, data: undefined }, { pager }))).not.toContain('class="pager"');
  });
});
