import { PAGE_SIZES, first, next, pageNumber, previous, range, type PageState } from '../lib/pagination';
import type { PagedList } from '../lib/usePagedList';

export interface PagerProps {
  page: PageState;
  count: number;
  nextCursor?: string;
  loading?: boolean;
  onChange: (p: PageState) => void;
  /** What the rows are, plural ("users"), for the label and for screen readers. */
  noun: string;
  /** The singular ("user"). */
  one: string;
}

/** Previous / next through server pages, and the page size. */
export function Pager({ page, count, nextCursor, loading, onChange, noun, one }: PagerProps) {
  const prev = previous(page);
  const n = pageNumber(page);
  return (
    <nav className="pager" aria-label={`Pages of ${noun}`}>
      <span className="muted">{n === 1 && !nextCursor ? `${count.toLocaleString('en-US')} ${count === 1 ? one : noun}` : `${range(page, count)}${n !== undefined ? ` · page ${n}` : ''}`}</span>
      <span className="pager-buttons">
        <label className="inline-label">
          Per page{' '}
          <select value={page.limit} onChange={(e) => onChange({ ...first(page), limit: Number(e.target.value) })} disabled={loading}>
            {PAGE_SIZES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        {prev && page.trail === undefined ? (
          <button type="button" className="button" onClick={() => onChange(first(page))} disabled={loading}>
            First page
          </button>
        ) : (
          <button type="button" className="button" onClick={() => prev && onChange(prev)} disabled={!prev || loading}>
            ← Previous
          </button>
        )}
        <button type="button" className="button" onClick={() => nextCursor && onChange(next(page, nextCursor))} disabled={!nextCursor || loading}>
          Next →
        </button>
      </span>
    </nav>
  );
}

/** The Pager of a list from usePagedList (ResourceTable shows it under the rows). */
export function ListPager<T>({ list, noun, one }: { list: PagedList<T>; noun: string; one: string }) {
  return <Pager page={list.page} count={list.data?.items.length ?? 0} nextCursor={list.data?.nextCursor} loading={list.loading} onChange={list.go} noun={noun} one={one} />;
}
