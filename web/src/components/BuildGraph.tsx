// A build's steps as columns, one per stage; a parallel step shows its children side by side.
import type { BuildStep } from '../api/types';
import { buildGraph, type GraphNode } from '../lib/buildGraph';
import { statusIcon, statusLabel } from '../lib/builds';
import type { SpecOutline } from '../lib/specOutline';
import { Duration } from './BuildStatus';

export interface BuildGraphProps {
  steps: BuildStep[];
  outline?: SpecOutline;
  /** Whether the build still runs: steps not reported yet are pending, else they did not run. */
  active: boolean;
  now: number;
  /** A step was chosen: show its part of the log. */
  onSelect?: (step: BuildStep) => void;
  /** Step titles from the spec, by name: shown instead of the name, the name beside them. */
  titles?: ReadonlyMap<string, string>;
}

export function BuildGraph({ steps, outline, active, now, onSelect, titles }: BuildGraphProps) {
  const columns = buildGraph(steps, outline, (n) => ({ name: n.name, stage: n.stage, status: active ? 'pending' : 'not-run', exitCode: 0, attempts: 0 }));
  if (columns.length === 0) return <p className="muted">No steps yet: the runner lists them when it starts the build.</p>;
  return (
    <div className="graph" role="list" aria-label="Stages">
      {columns.map((c) => (
        <section className="graph-col" role="listitem" key={c.stage || 'steps'} aria-label={c.stage ? `Stage ${c.stage}` : 'Steps'}>
          <h3 className="graph-stage">{c.stage || 'Steps'}</h3>
          <ol className="graph-nodes">
            {c.nodes.map((n) => (
              <li key={n.step.name}>
                <Node node={n} now={now} onSelect={onSelect} titles={titles} />
              </li>
            ))}
          </ol>
        </section>
      ))}
    </div>
  );
}

function Node({ node, now, onSelect, titles }: { node: GraphNode<BuildStep>; now: number; onSelect?: (s: BuildStep) => void; titles?: ReadonlyMap<string, string> }) {
  if (node.children.length === 0) return <StepCard step={node.step} now={now} onSelect={onSelect} title={titles?.get(node.step.name)} />;
  return (
    <div className={`graph-group graph-${node.step.status}`} data-testid={`step-${node.step.name}`} data-status={node.step.status}>
      <StepCard step={node.step} now={now} onSelect={onSelect} group title={titles?.get(node.step.name)} />
      <ul className="graph-children" aria-label={`In parallel in ${node.step.name}`}>
        {node.children.map((k) => (
          <li key={k.step.name}>
            <Node node={k} now={now} onSelect={onSelect} titles={titles} />
          </li>
        ))}
      </ul>
    </div>
  );
}

function StepCard({ step, now, onSelect, group, title }: { step: BuildStep; now: number; onSelect?: (s: BuildStep) => void; group?: boolean; title?: string }) {
  const detail = step.message || (step.status === 'failed' && step.exitCode ? `exit code ${step.exitCode}` : '');
  // "waiting for approval" is said once, by the message when there is one.
  const label = detail.startsWith(statusLabel(step.status)) ? '' : statusLabel(step.status);
  return (
    <button
      type="button"
      className={`step step-${step.status}${group ? ' step-group' : ''}`}
      onClick={() => onSelect?.(step)}
      data-testid={group ? undefined : `step-${step.name}`}
      data-status={step.status}
      title={`${title ? `${title} (${step.name})` : step.name}: ${statusLabel(step.status)}${detail ? ` — ${detail}` : ''}. Show in the log.`}
    >
      <span className={step.status === 'running' ? 'step-icon status-running' : 'step-icon'} aria-hidden="true">
        {statusIcon(step.status)}
      </span>
      <span className="step-main">
        <span className="step-name">
          {group && <span className="muted small">parallel · </span>}
          {title ?? step.name}
          {title && <span className="muted small"> {step.name}</span>}
        </span>
        <span className="step-meta muted small">
          {label}
          {step.startedAt && (
            <>
              {label && ' · '}
              <Duration start={step.startedAt} end={step.finishedAt} now={now} />
            </>
          )}
          {step.attempts > 1 && ` · ${step.attempts} attempts`}
        </span>
        {detail && <span className="step-msg small">{detail}</span>}
      </span>
    </button>
  );
}
