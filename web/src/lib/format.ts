// How times and small values are shown.

const dateTime = new Intl.DateTimeFormat('en-GB', {
  year: 'numeric',
  month: 'short',
  day: '2-digit',
  hour: '2-digit',
  minute: '2-digit',
  second: '2-digit',
  hour12: false,
});

/** "22 Nov 2026, 12:43:29" in the browser's time zone. */
export function formatTime(iso?: string): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTime.format(d);
}

/** "3 minutes ago", "in 89 days". */
export function relativeTime(iso: string | undefined, now: number = Date.now()): string {
  if (!iso) return '—';
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return iso;
  const diff = Math.round((t - now) / 1000);
  const abs = Math.abs(diff);
  const units: [number, string][] = [
    [60, 'second'],
    [60, 'minute'],
    [24, 'hour'],
    [30, 'day'],
    [12, 'month'],
    [Infinity, 'year'],
  ];
  let v = abs;
  let unit = 'second';
  for (const [size, name] of units) {
    unit = name;
    if (v < size) break;
    v = Math.floor(v / size);
  }
  if (unit === 'second' && v < 10) return diff <= 0 ? 'just now' : 'in a few seconds';
  const s = `${v} ${unit}${v === 1 ? '' : 's'}`;
  return diff <= 0 ? `${s} ago` : `in ${s}`;
}

export function plural(n: number, one: string, many = one + 's'): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}
