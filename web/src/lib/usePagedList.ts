// A server-paged list whose position is in the URL (?after=&limit=) and whose way back is in
// history state (see pagination.ts). `deps` are what else the list depends on (filters).
import { useCallback } from 'react';
import type { ListOptions, Page } from '../api/types';
import { href, navigate, useLocation } from '../app/router';
import { pageParams, readPage, type PageState } from './pagination';
import { useResource, type Resource } from './useResource';

/** A page of a list, where it is, and the way to another page. */
export type PagedList<T> = Resource<Page<T>> & { page: PageState; go: (p: PageState) => void };

export function usePagedList<T>(load: (o: ListOptions, signal: AbortSignal) => Promise<Page<T>>, deps: readonly unknown[] = []): PagedList<T> {
  const loc = useLocation();
  const params = new URLSearchParams(loc.search);
  const page = readPage(params, loc.state);
  const res = useResource((signal) => load({ limit: page.limit, after: page.after || undefined }, signal), [page.after, page.limit, ...deps]);
  const go = useCallback(
    (p: PageState) => {
      const q = Object.fromEntries(new URLSearchParams(window.location.search));
      navigate(href(window.location.pathname, { ...q, ...pageParams(p) }), { state: { trail: p.trail ?? [] } });
    },
    [],
  );
  return { ...res, page, go };
}
