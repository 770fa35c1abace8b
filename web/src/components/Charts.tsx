// Charts drawn as SVG with visx (scales from d3-scale, paths from d3-shape): a daily chart with
// stacked bars and an optional line on its own scale, and a sparkline. Colours come from the
// theme's CSS variables, so both themes work. Every chart is an image with a one-sentence
// summary for screen readers (role="img" + aria-label) and the numbers as a table under
// "Show as table", so nothing is only in the picture. This module and visx load lazily.
import { Bar, LinePath } from '@visx/shape';
import { scaleBand, scaleLinear } from '@visx/scale';
import { useEffect, useId, useRef, useState, type ReactNode } from 'react';
import { TableScroll } from './ResourceTable';

export interface ChartSeries {
  key: string;
  label: string;
  /** A class that sets `fill` (bars) or `stroke` (the line): chart-success, chart-danger, … */
  className: string;
  /** One value a label; undefined is "no value" (a gap in the line, nothing in the table). */
  values: (number | undefined)[];
}

export interface DailyChartProps {
  /** The chart's title, shown above it. */
  title: string;
  /** What the chart shows, in one or two sentences: its accessible name. */
  summary: string;
  labels: string[];
  /** Stacked bars, bottom first. */
  bars: ChartSeries[];
  /** A line over the bars, on its own scale (right axis). */
  line?: ChartSeries & { max?: number };
  formatBar?: (v: number) => string;
  formatLine?: (v: number) => string;
  height?: number;
  testId?: string;
  /** Under the chart, e.g. totals. */
  footer?: ReactNode;
  /** The table's first column header: what a label is ("Day", "Week of", "Month"). */
  labelHeader?: string;
}

const MARGIN = { top: 10, right: 44, bottom: 24, left: 48 };

/** The width of a box, kept up to date as the layout changes. */
function useWidth<T extends HTMLElement>(fallback: number) {
  const ref = useRef<T>(null);
  const [width, setWidth] = useState(fallback);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    setWidth(el.clientWidth || fallback);
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(([e]) => setWidth(Math.max(120, Math.floor(e.contentRect.width))));
    ro.observe(el);
    return () => ro.disconnect();
  }, [fallback]);
  return [ref, width] as const;
}

export function DailyChart({ title, summary, labels, bars, line, formatBar = String, formatLine = String, height = 180, testId, footer, labelHeader = 'Day' }: DailyChartProps) {
  const [box, width] = useWidth<HTMLDivElement>(560);
  const titleId = useId();
  const innerW = Math.max(40, width - MARGIN.left - (line ? MARGIN.right : 12));
  const innerH = height - MARGIN.top - MARGIN.bottom;
  const x = scaleBand<string>({ domain: labels.map((_, i) => String(i)), range: [0, innerW], padding: 0.25 });
  const stacks = labels.map((_, i) => bars.reduce((s, b) => s + (b.values[i] ?? 0), 0));
  const y = scaleLinear<number>({ domain: [0, Math.max(1, ...stacks)], range: [innerH, 0], nice: true });
  const yLine = line ? scaleLinear<number>({ domain: [0, line.max ?? Math.max(1, ...line.values.map((v) => v ?? 0))], range: [innerH, 0], nice: true }) : undefined;
  // Every label fits when there is room; otherwise every nth.
  const every = Math.max(1, Math.ceil(labels.length / Math.max(1, Math.floor(innerW / 56))));
  const points = line ? line.values.map((v, i) => ({ i, v })) : [];

  return (
    <figure className="chart" data-testid={testId}>
      <figcaption className="chart-title" id={titleId}>
        {title}
      </figcaption>
      <div className="chart-legend" aria-hidden="true">
        {[...bars, ...(line ? [line] : [])].map((s) => (
          <span key={s.key} className="chart-key">
            <span className={`chart-swatch ${s.className}`} />
            {s.label}
          </span>
        ))}
      </div>
      <div ref={box} className="chart-box">
        <svg width={width} height={height} role="img" aria-label={`${title}. ${summary}`} data-chart-bars={stacks.filter((n) => n > 0).length}>
          <g transform={`translate(${MARGIN.left},${MARGIN.top})`}>
            {y.ticks(4).map((t) => (
              <g key={t} className="chart-grid">
                <line x1={0} x2={innerW} y1={y(t)} y2={y(t)} />
                <text x={-8} y={y(t)} dy="0.32em" textAnchor="end">
                  {formatBar(t)}
                </text>
              </g>
            ))}
            {yLine?.ticks(4).map((t) => (
              <text key={t} className="chart-axis" x={innerW + 8} y={yLine(t)} dy="0.32em">
                {formatLine(t)}
              </text>
            ))}
            {labels.map((_, i) => {
              let base = 0;
              return bars.map((b) => {
                const v = b.values[i] ?? 0;
                if (v <= 0) return null;
                const y0 = y(base);
                base += v;
                const y1 = y(base);
                return <Bar key={`${b.key}-${i}`} className={b.className} x={x(String(i))} y={y1} width={x.bandwidth()} height={Math.max(0, y0 - y1)} />;
              });
            })}
            {line && yLine && (
              <>
                <LinePath
                  className={`chart-line ${line.className}`}
                  data={points}
                  defined={(p) => p.v !== undefined}
                  x={(p) => (x(String(p.i)) ?? 0) + x.bandwidth() / 2}
                  y={(p) => yLine(p.v ?? 0)}
                />
                {points.map((p) =>
                  p.v === undefined ? null : <circle key={p.i} className={`chart-dot ${line.className}`} r={2.5} cx={(x(String(p.i)) ?? 0) + x.bandwidth() / 2} cy={yLine(p.v)} />,
                )}
              </>
            )}
            {labels.map((l, i) =>
              i % every === (labels.length - 1) % every ? (
                <text key={i} className="chart-axis" x={(x(String(i)) ?? 0) + x.bandwidth() / 2} y={innerH + 16} textAnchor="middle">
                  {l}
                </text>
              ) : null,
            )}
          </g>
        </svg>
      </div>
      {footer && <div className="chart-footer">{footer}</div>}
      <details className="chart-data">
        <summary>Show as table</summary>
        <TableScroll>
          <table className="table table-compact">
            <caption className="visually-hidden">{title}</caption>
            <thead>
              <tr>
                <th scope="col">{labelHeader}</th>
                {bars.map((b) => (
                  <th key={b.key} scope="col" className="col-num">
                    {b.label}
                  </th>
                ))}
                {line && (
                  <th scope="col" className="col-num">
                    {line.label}
                  </th>
                )}
              </tr>
            </thead>
            <tbody>
              {labels.map((l, i) => (
                <tr key={i}>
                  <th scope="row">{l}</th>
                  {bars.map((b) => (
                    <td key={b.key} className="col-num">
                      {b.values[i] === undefined ? '—' : formatBar(b.values[i] as number)}
                    </td>
                  ))}
                  {line && <td className="col-num">{line.values[i] === undefined ? '—' : formatLine(line.values[i] as number)}</td>}
                </tr>
              ))}
            </tbody>
          </table>
        </TableScroll>
      </details>
    </figure>
  );
}

/**
 * A small line of values 0..max with gaps where there is no value (a day without builds), for a
 * table cell. The label is its accessible name; the full numbers are on the page it links to.
 */
export function Sparkline({ values, max = 100, label, className = 'chart-accent', width = 96, height = 24 }: { values: (number | undefined)[]; max?: number; label: string; className?: string; width?: number; height?: number }) {
  const x = scaleLinear<number>({ domain: [0, Math.max(1, values.length - 1)], range: [2, width - 2] });
  const y = scaleLinear<number>({ domain: [0, max], range: [height - 3, 3] });
  const pts = values.map((v, i) => ({ i, v }));
  const shown = pts.filter((p) => p.v !== undefined);
  return (
    <svg className="sparkline" width={width} height={height} role="img" aria-label={label}>
      <title>{label}</title>
      <line className="sparkline-base" x1={2} x2={width - 2} y1={height - 3} y2={height - 3} />
      <LinePath className={`chart-line ${className}`} data={pts} defined={(p) => p.v !== undefined} x={(p) => x(p.i)} y={(p) => y(p.v ?? 0)} />
      {/* A lone day between gaps would draw no line: a dot shows it. */}
      {shown.map((p) => (
        <circle key={p.i} className={`chart-dot ${className}`} r={1.6} cx={x(p.i)} cy={y(p.v ?? 0)} />
      ))}
    </svg>
  );
}
