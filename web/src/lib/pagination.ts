// Cursor pagination. The API pages forward only (after = the previous page's nextCursor); to
// go back, the UI keeps the trail of cursors that led to the current page. The current cursor
// and the limit live in the URL (shareable); the trail lives in history state (survives reload
// and back/forward, but not a shared link — which then offers "First page" instead of "Previous").

export const DEFAULT_LIMIT = 50;
export const PAGE_SIZES = [25, 50, 100, 200] as const;

export interface PageState {
  /** Cursor of the current page; '' for the first. */
  after: string;
  limit: number;
  /** Cursors of the pages before this one, oldest first. Undefined when unknown (shared link). */
  trail?: string[];
}

/** Reads the page position from URL parameters and history state. */
export function readPage(params: URLSearchParams, historyState: unknown, fallbackLimit = DEFAULT_LIMIT): PageState {
  const after = params.get('after') ?? '';
  const limit = clampLimit(Number(params.get('limit')) || fallbackLimit);
  const t = (historyState as { trail?: unknown } | null)?.trail;
  const trail = Array.isArray(t) && t.every((x) => typeof x === 'string') ? (t as string[]) : after ? undefined : [];
  return { after, limit, trail };
}

export function clampLimit(n: number): number {
  if (!Number.isFinite(n)) return DEFAULT_LIMIT;
  return Math.min(1000, Math.max(1, Math.floor(n)));
}

/** The page after the current one. */
export function next(p: PageState, nextCursor: string): PageState {
  return { after: nextCursor, limit: p.limit, trail: [...(p.trail ?? []), p.after] };
}

/** The page before, or the first page when the trail is unknown; undefined on the first page. */
export function previous(p: PageState): PageState | undefined {
  if (!p.after) return undefined;
  if (!p.trail || p.trail.length === 0) return first(p);
  const trail = p.trail.slice(0, -1);
  return { after: p.trail[p.trail.length - 1], limit: p.limit, trail };
}

export function first(p: PageState): PageState {
  return { after: '', limit: p.limit, trail: [] };
}

/** 1-based page number, or undefined when the link did not carry the trail. */
export function pageNumber(p: PageState): number | undefined {
  if (!p.after) return 1;
  return p.trail ? p.trail.length + 1 : undefined;
}

/** "Showing 51–100" style range, when the page number is known. */
export function range(p: PageState, count: number): string {
  const n = pageNumber(p);
  if (count === 0) return 'No rows';
  if (n === undefined) return `${count} row${count === 1 ? '' : 's'}`;
  const start = (n - 1) * p.limit + 1;
  return `${start.toLocaleString('en-US')}–${(start + count - 1).toLocaleString('en-US')}`;
}

/** URL parameters for a page: the cursor and a non-default limit. */
export function pageParams(p: PageState, defaultLimit = DEFAULT_LIMIT): Record<string, string | undefined> {
  return { after: p.after || undefined, limit: p.limit !== defaultLimit ? String(p.limit) : undefined };
}

/** A count shown when the server capped it: 1000 with more → "1,000+". */
export function countLabel(n: number, more: boolean): string {
  return n.toLocaleString('en-US') + (more ? '+' : '');
}

/**
 * Appends a page to rows already loaded, skipping rows already present (a row can move pages
 * when new ones arrive between requests).
 */
export function appendUnique<T extends { id: string }>(rows: T[], page: T[]): T[] {
  if (rows.length === 0) return page.slice();
  const seen = new Set(rows.map((r) => r.id));
  const out = rows.slice();
  for (const r of page) if (!seen.has(r.id)) out.push(r);
  return out;
}
