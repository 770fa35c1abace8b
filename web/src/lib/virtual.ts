/** Which rows to render for a scroll position: [start, end) with `overscan` extra rows each side. */
export function visibleRange(scrollTop: number, viewHeight: number, rowHeight: number, count: number, overscan = 8): { start: number; end: number } {
  if (count <= 0 || rowHeight <= 0) return { start: 0, end: 0 };
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const visible = Math.ceil(Math.max(0, viewHeight) / rowHeight) + 1;
  const start = Math.max(0, first - overscan);
  const end = Math.min(count, first + visible + overscan);
  return { start: Math.min(start, end), end };
}

/**
 * Browsers cap an element's height (Chromium near 33 million px); a 64 MiB log at 20 px a line
 * would pass it. Past this height the scrolling area stays this tall and maps its scroll
 * position onto the rows proportionally.
 */
export const MAX_SCROLL_PX = 8_000_000;

export interface LogWindow {
  start: number;
  end: number;
  /** Height of the scrolling content. */
  height: number;
  /** Rows sit at index × rowHeight − shift (0 unless the content is scaled). */
  shift: number;
}

/** The rows to render for a scroll position, scaling the content when it would be too tall. */
export function logWindow(scrollTop: number, viewHeight: number, rowHeight: number, count: number, overscan = 10, maxPx = MAX_SCROLL_PX): LogWindow {
  const total = count * rowHeight;
  if (total <= maxPx || viewHeight >= maxPx) {
    return { ...visibleRange(scrollTop, viewHeight, rowHeight, count, overscan), height: total, shift: 0 };
  }
  const ratio = (total - viewHeight) / (maxPx - viewHeight);
  const top = Math.min(Math.max(0, scrollTop), maxPx - viewHeight);
  const virtualTop = top * ratio;
  const r = visibleRange(virtualTop, viewHeight, rowHeight, count, overscan);
  return { ...r, height: maxPx, shift: virtualTop - top };
}

/** The scrollTop that puts row `index` at the top of the view (inverse of logWindow). */
export function scrollTopForRow(index: number, viewHeight: number, rowHeight: number, count: number, maxPx = MAX_SCROLL_PX): number {
  const total = count * rowHeight;
  const want = Math.max(0, Math.min(index * rowHeight, total - viewHeight));
  if (total <= maxPx || viewHeight >= maxPx) return want;
  const ratio = (total - viewHeight) / (maxPx - viewHeight);
  return want / ratio;
}
