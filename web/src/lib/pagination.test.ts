import { describe, expect, it } from 'vitest';
import { appendUnique, clampLimit, countLabel, first, next, pageNumber, pageParams, previous, range, readPage } from './pagination';

describe('cursor pagination', () => {
  it('walks forward and back through the trail', () => {
    let p = readPage(new URLSearchParams(''), null);
    expect(p).toEqual({ after: '', limit: 50, trail: [] });
    expect(previous(p)).toBeUndefined();
    p = next(p, 'c1');
    p = next(p, 'c2');
    expect(p).toEqual({ after: 'c2', limit: 50, trail: ['', 'c1'] });
    expect(pageNumber(p)).toBe(3);
    expect(range(p, 50)).toBe('101–150');
    p = previous(p)!;
    expect(p).toEqual({ after: 'c1', limit: 50, trail: [''] });
    p = previous(p)!;
    expect(p).toEqual({ after: '', limit: 50, trail: [] });
    expect(pageNumber(p)).toBe(1);
  });

  it('reads a shared link without its trail and offers the first page as "previous"', () => {
    const p = readPage(new URLSearchParams('after=c9&limit=25'), null);
    expect(p).toEqual({ after: 'c9', limit: 25, trail: undefined });
    expect(pageNumber(p)).toBeUndefined();
    expect(range(p, 3)).toBe('3 rows');
    expect(previous(p)).toEqual({ after: '', limit: 25, trail: [] });
    // A trail in history state is used; junk is not.
    expect(readPage(new URLSearchParams('after=c9'), { trail: ['', 'c5'] }).trail).toEqual(['', 'c5']);
    expect(readPage(new URLSearchParams('after=c9'), { trail: [1, 2] }).trail).toBeUndefined();
  });

  it('keeps the limit in range and out of the URL when it is the default', () => {
    expect(clampLimit(5000)).toBe(1000);
    expect(clampLimit(0)).toBe(1);
    expect(clampLimit(NaN)).toBe(50);
    expect(readPage(new URLSearchParams('limit=abc'), null).limit).toBe(50);
    expect(pageParams({ after: '', limit: 50 })).toEqual({ after: undefined, limit: undefined });
    expect(pageParams({ after: 'c', limit: 100 })).toEqual({ after: 'c', limit: '100' });
    expect(first({ after: 'c', limit: 100, trail: ['x'] })).toEqual({ after: '', limit: 100, trail: [] });
  });

  it('labels capped counts and empty pages', () => {
    expect(countLabel(1000, true)).toBe('1,000+');
    expect(countLabel(7, false)).toBe('7');
    expect(range({ after: '', limit: 50, trail: [] }, 0)).toBe('No rows');
  });

  it('appends pages without repeating rows', () => {
    const rows = appendUnique([{ id: 'a' }, { id: 'b' }], [{ id: 'b' }, { id: 'c' }]);
    expect(rows.map((r) => r.id)).toEqual(['a', 'b', 'c']);
    expect(appendUnique([], [{ id: 'x' }])).toEqual([{ id: 'x' }]);
  });
});
