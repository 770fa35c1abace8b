// An application's resources as a left-to-right graph (lib/appGraph.ts lays it out): each
// node a button with its kind's icon, name, health and sync; edges drawn in one SVG behind.
// Nodes are in the tab order, in the layout's order (top to bottom, column by column); Enter
// or a click opens the object (onOpen), or expands a "+N pods" group (onExpand).
import { memo } from 'react';
import { healthBadge } from '../lib/apps';
import { NODE_H, NODE_W, type Layout, type PlacedNode } from '../lib/appGraph';

/** Small line icons per kind (24×24 viewBox, stroke currentColor); unknown kinds get a box. */
const ICONS: Record<string, string> = {
  Application: 'M12 2l9 5v10l-9 5-9-5V7z M12 12l9-5 M12 12v10 M12 12L3 7',
  Deployment: 'M4 6h16v4H4z M4 14h16v4H4z M8 10v4 M16 10v4',
  StatefulSet: 'M4 4h16v5H4z M4 10h16v5H4z M4 16h16v4H4z',
  DaemonSet: 'M3 5h7v6H3z M14 5h7v6h-7z M3 14h7v6H3z M14 14h7v6h-7z',
  ReplicaSet: 'M6 3h12v6H6z M3 12h8v8H3z M13 12h8v8h-8z',
  Pod: 'M12 3l8 4.5v9L12 21l-8-4.5v-9z M12 12l8-4.5 M12 12v9 M12 12L4 7.5',
  Service: 'M12 4a8 8 0 100 16 8 8 0 000-16z M4 12h16 M12 4c3 3 3 13 0 16 M12 4c-3 3-3 13 0 16',
  Ingress: 'M3 12h13 M12 7l5 5-5 5 M20 4v16',
  ConfigMap: 'M5 3h10l4 4v14H5z M8 10h8 M8 14h8 M8 18h5',
  Secret: 'M6 11h12v10H6z M9 11V7a3 3 0 016 0v4 M12 15v2',
  Job: 'M12 4a8 8 0 100 16 8 8 0 000-16z M12 8v4l3 2',
  CronJob: 'M12 4a8 8 0 100 16 8 8 0 000-16z M12 8v4l3 2 M4 4l3 3 M20 4l-3 3',
  PersistentVolumeClaim: 'M5 6c0-2 14-2 14 0v12c0 2-14 2-14 0z M5 6c0 2 14 2 14 0 M5 12c0 2 14 2 14 0',
  ServiceAccount: 'M12 4a4 4 0 100 8 4 4 0 000-8z M4 21c0-4 4-6 8-6s8 2 8 6',
  Namespace: 'M3 5h18v14H3z M3 9h18',
  EndpointSlice: 'M5 12h4 M15 12h4 M12 5v4 M12 15v4 M9 9h6v6H9z',
  HorizontalPodAutoscaler: 'M4 12h16 M8 8l-4 4 4 4 M16 8l4 4-4 4',
  Rollout: 'M4 17l5-5 4 4 7-8 M15 8h5v5',
};
const BOX = 'M4 4h16v16H4z';

export function KindIcon({ kind, size = 20 }: { kind: string; size?: number }) {
  return (
    <svg className="kind-icon" width={size} height={size} viewBox="0 0 24 24" aria-hidden="true" focusable="false">
      <path d={ICONS[kind] ?? BOX} fill="none" stroke="currentColor" strokeWidth="1.6" strokeLinejoin="round" strokeLinecap="round" />
    </svg>
  );
}

/**
 * What a screen reader hears after the node's visible text (kind and name): its namespace and
 * status, or what a group does. The node is named by its content (a label differing from the
 * visible text fails axe-core's label-content-name-mismatch).
 */
export function nodeStatusText(n: PlacedNode): string {
  if (n.type === 'group') return `, ${n.health ?? 'Unknown'} at worst: show them`;
  if (n.type === 'app') return '';
  return ', ' + [n.namespace && `in ${n.namespace}`, n.health, n.sync, n.requiresPruning && 'requires pruning'].filter(Boolean).join(', ');
}

const GraphNodeView = memo(function GraphNodeView({ n, selected, onOpen, onExpand }: { n: PlacedNode; selected: boolean; onOpen: (n: PlacedNode) => void; onExpand: (key: string) => void }) {
  const tone = n.type === 'app' ? 'neutral' : healthBadge(n.health).tone;
  const cls = ['graph-node', `graph-node-${tone}`, `graph-node-${n.type}`, n.missing && 'graph-node-missing', selected && 'graph-node-selected'].filter(Boolean).join(' ');
  return (
    <button
      type="button"
      className={cls}
      style={{ left: n.x, top: n.y, width: NODE_W, height: NODE_H }}
      onClick={() => (n.type === 'group' ? onExpand(n.groupKey!) : n.type === 'resource' ? onOpen(n) : undefined)}
      aria-pressed={n.type === 'resource' ? selected : undefined}
      data-testid="graph-node"
      data-kind={n.kind}
      data-name={n.name}
      data-type={n.type}
      data-column={n.column}
      data-health={n.health}
    >
      <span className="graph-node-icon">
        <KindIcon kind={n.kind} />
      </span>
      <span className="graph-node-text">
        <span className="graph-node-kind">{n.type === 'group' ? 'Pods' : n.kind}</span>{' '}
        <span className="graph-node-name">{n.name}</span>
        <span className="visually-hidden">{nodeStatusText(n)}</span>
      </span>
      <span className="graph-node-status" aria-hidden="true">
        {n.health && <span className={`dot dot-${tone}`} title={n.health} />}
        {n.sync && n.sync !== 'Synced' && <span className="graph-node-sync" title={n.sync}>{n.sync === 'OutOfSync' ? '≠' : '?'}</span>}
        {n.requiresPruning && <span className="graph-node-sync" title="requires pruning">✂</span>}
      </span>
    </button>
  );
});

export function ResourceGraph({ layout, selected, onOpen, onExpand, label }: { layout: Layout; selected?: string; onOpen: (n: PlacedNode) => void; onExpand: (key: string) => void; label: string }) {
  return (
    <div className="graph-scroll" data-testid="app-graph" role="group" aria-label={label}>
      <div className="graph-canvas" style={{ width: layout.width, height: layout.height }}>
        <svg className="graph-edges" width={layout.width} height={layout.height} aria-hidden="true">
          {layout.edges.map((e) => {
            const mx = (e.x1 + e.x2) / 2;
            return <path key={`${e.from}>${e.to}`} d={`M${e.x1},${e.y1} C${mx},${e.y1} ${mx},${e.y2} ${e.x2},${e.y2}`} />;
          })}
        </svg>
        {layout.nodes.map((n) => (
          <GraphNodeView key={n.id} n={n} selected={n.id === selected} onOpen={onOpen} onExpand={onExpand} />
        ))}
      </div>
    </div>
  );
}
