// Renders only the rows in view (plus a few), so a list of 10,000+ rows scrolls like a list
// of 30. Rows have one fixed height; the list asks for more rows when the end comes near.
import { memo, useCallback, useEffect, useRef, useState, type ReactNode } from 'react';
import { visibleRange } from '../lib/virtual';

export interface VirtualListProps<T> {
  items: T[];
  rowHeight: number;
  /** Most the scrolling area may grow to, in CSS (e.g. "calc(100vh - 300px)"); fewer rows take less. */
  maxHeight: string;
  renderRow: (item: T, index: number) => ReactNode;
  rowKey: (item: T) => string;
  /** Called when the last rows come into view and there is more to load. */
  onEndReached?: () => void;
  hasMore?: boolean;
  footer?: ReactNode;
  /** A header row, kept in view at the top of the scrolling area. */
  header?: ReactNode;
  headerHeight?: number;
  label: string;
}

export function VirtualList<T>({ items, rowHeight, maxHeight, renderRow, rowKey, onEndReached, hasMore, footer, header, headerHeight = 0, label }: VirtualListProps<T>) {
  const ref = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 800 });
  const frame = useRef(0);

  const measure = useCallback(() => {
    cancelAnimationFrame(frame.current);
    frame.current = requestAnimationFrame(() => {
      const el = ref.current;
      if (el) setView((v) => (v.top === el.scrollTop && v.height === el.clientHeight ? v : { top: el.scrollTop, height: el.clientHeight }));
    });
  }, []);

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => {
      ro.disconnect();
      cancelAnimationFrame(frame.current);
    };
  }, [measure]);

  const { start, end } = visibleRange(view.top - headerHeight, view.height, rowHeight, items.length, 8);

  useEffect(() => {
    if (hasMore && onEndReached && end >= items.length - 20) onEndReached();
  }, [end, items.length, hasMore, onEndReached]);

  const rows: ReactNode[] = [];
  for (let i = start; i < end; i++) {
    const item = items[i];
    rows.push(<Row key={rowKey(item)} item={item} index={i} height={rowHeight} render={renderRow as (item: unknown, index: number) => ReactNode} />);
  }
  return (
    <div className="vlist" role="table" aria-label={label} aria-rowcount={items.length + 1}>
      <div ref={ref} className="vlist-scroll" style={{ maxHeight }} onScroll={measure} tabIndex={0} role="rowgroup" aria-label={`${label} rows`}>
        {header && (
          <div className="vlist-head" style={{ height: headerHeight }}>
            {header}
          </div>
        )}
        <div className="vlist-inner" style={{ height: items.length * rowHeight }}>
          {rows}
        </div>
        {footer}
      </div>
    </div>
  );
}

// A row re-renders only when its item or position changes: while scrolling, rows that stay in
// view cost nothing (renderRow must keep its identity, which it does while the parent is idle).
const Row = memo(function Row({ item, index, height, render }: { item: unknown; index: number; height: number; render: (item: unknown, index: number) => ReactNode }) {
  return (
    <div className="vrow" role="row" aria-rowindex={index + 2} style={{ transform: `translateY(${index * height}px)`, height }}>
      {render(item, index)}
    </div>
  );
});
