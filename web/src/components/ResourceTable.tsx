// A list page's table and the states around it, the same on every page: the error (with a way to
// try again), placeholder rows while the first answer is on its way, an empty state, then the
// rows, and under them the pager when the list is paged on the server. DataTable is the table
// alone, for rows a page already has.
import { useEffect, useRef, useState, type HTMLAttributes, type ReactNode, type TdHTMLAttributes } from 'react';
import { formatTime, relativeTime } from '../lib/format';
import { EmptyState, ErrorState, LoadingRows } from './States';

/** Attributes of a row or a cell, data-* hooks included. */
type Attrs<E> = E & { [data: `data-${string}`]: string | number | boolean | undefined };

export interface Column<T> {
  header: ReactNode;
  cell: (row: T) => ReactNode;
  /** Class of the header cell and of the data cells (`actions-col`, `col-num`, …). */
  className?: string;
  /** Class of the data cells when it is not `className` ('' for none). */
  cellClassName?: string;
  /** Other attributes of a data cell: a tooltip, a test hook. */
  cellProps?: (row: T) => Attrs<TdHTMLAttributes<HTMLTableCellElement>>;
}

export interface DataTableProps<T> {
  rows: readonly T[];
  /** The columns; `false` leaves one out (`admin && {…}`). */
  columns: readonly (Column<T> | false)[];
  rowKey: (row: T, index: number) => string;
  /** Attributes of a row, such as the `data-testid` the browser test finds it by. */
  rowProps?: (row: T) => Attrs<HTMLAttributes<HTMLTableRowElement>>;
  /** `table` by default; `table table-compact`, `table builds-table`. */
  className?: string;
  /** Dims the rows while they are loaded again. */
  busy?: boolean;
  testId?: string;
}

/** Rows as a table, a column a field. */
export function DataTable<T>({ rows, columns, rowKey, rowProps, className = 'table', busy, testId }: DataTableProps<T>) {
  const cols = columns.filter((c): c is Column<T> => c !== false);
  return (
    <TableScroll>
    <table className={className} aria-busy={busy} data-testid={testId}>
      <thead>
        <tr>
          {cols.map((c, i) => (
            <th key={i} scope="col" className={c.className}>
              {c.header}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row, i) => (
          <tr key={rowKey(row, i)} {...rowProps?.(row)}>
            {cols.map((c, j) => (
              <td key={j} className={(c.cellClassName ?? c.className) || undefined} {...c.cellProps?.(row)}>
                {c.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
    </TableScroll>
  );
}

/**
 * A table's box: it scrolls sideways on its own when the screen is narrower than the columns,
 * and only then is it a tab stop (a scrolling region must be reachable from the keyboard).
 */
export function TableScroll({ children }: { children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    const el = ref.current;
    if (!el || typeof ResizeObserver === 'undefined') return;
    const check = () => setScrolls(el.scrollWidth > el.clientWidth + 1);
    const ro = new ResizeObserver(check);
    ro.observe(el);
    if (el.firstElementChild) ro.observe(el.firstElementChild);
    check();
    return () => ro.disconnect();
  }, []);
  return (
    <div ref={ref} className="table-scroll" tabIndex={scrolls ? 0 : undefined}>
      {children}
    </div>
  );
}

/**
 * What a list hook returns (useResource over `{ items }`, or usePagedList): the rows once loaded,
 * the last error, whether a load is under way, and the way to load again.
 */
export interface ListState<T> {
  data: { items: readonly T[] } | undefined;
  error: unknown;
  loading: boolean;
  reload?: () => void;
}

export interface ResourceTableProps<T> extends Omit<DataTableProps<T>, 'rows' | 'busy' | 'testId'> {
  list: ListState<T>;
  /** Placeholder rows before the first answer: their label for screen readers ("Loading users"), how many. */
  placeholder: { label: string; rows?: number };
  empty: { title: string; body?: ReactNode; action?: ReactNode };
  /** Under the rows: `<ListPager list={list} noun="users" one="user" />` for a list from usePagedList. */
  pager?: ReactNode;
}

/**
 * Error (with "Try again") → placeholder rows → empty state → the table, dimmed while it loads
 * again, and the pager under it. A quiet reload that fails keeps the rows (useResource); any
 * other error replaces them, since they may be another page's or filter's.
 */
export function ResourceTable<T>({ list, placeholder, empty, pager, ...table }: ResourceTableProps<T>) {
  const { data, reload } = list;
  if (list.error !== undefined) return <ErrorState error={list.error} onRetry={reload && (() => reload())} />;
  if (!data) return <LoadingRows rows={placeholder.rows} label={placeholder.label} />;
  if (data.items.length === 0) {
    return (
      <EmptyState title={empty.title} action={empty.action}>
        {empty.body}
      </EmptyState>
    );
  }
  return (
    <>
      <DataTable {...table} rows={data.items} busy={list.loading} />
      {pager}
    </>
  );
}

/** The column of row buttons at the right end; its header is for screen readers only. */
export function actionsColumn<T>(cell: (row: T) => ReactNode, cellClassName?: string): Column<T> {
  return { header: <span className="visually-hidden">Actions</span>, className: 'actions-col', cellClassName, cell };
}

/** A time as "3 minutes ago", the full time as its tooltip; `none` when there is no time. */
export function timeColumn<T>(header: ReactNode, time: (row: T) => string | undefined, none = '—'): Column<T> {
  return {
    header,
    cell: (row) => {
      const t = time(row);
      return t ? relativeTime(t) : none;
    },
    cellProps: (row) => ({ title: formatTime(time(row)) }),
  };
}
