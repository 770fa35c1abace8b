// The steps of the spec being edited, drawn as the build page draws a build (a column per stage,
// a parallel group's steps side by side), redrawn as the text changes. When the text stops being
// readable, the problem shows with its line and the last graph that could be read stays, framed.
import { useDeferredValue, useId, useMemo, useState } from 'react';
import type { GraphNode } from '../lib/buildGraph';
import { flatSteps, specColumns, specGraph, type SpecGraph as Graph, type SpecStep } from '../lib/specGraph';

export interface SpecGraphProps {
  spec: string;
  /** Puts the editor's cursor on a line (a step's, or the problem's). */
  onJump: (line: number, column?: number) => void;
}

export function SpecGraph({ spec, onJump }: SpecGraphProps) {
  // Typing stays responsive on a long spec: the graph follows a moment later if it must.
  const text = useDeferredValue(spec);
  const result = useMemo(() => specGraph(text), [text]);
  const [good, setGood] = useState<Graph | undefined>(result.ok ? result.graph : undefined);
  if (result.ok && good !== result.graph) setGood(result.graph);
  const graph = result.ok ? result.graph : good;
  const columns = useMemo(() => (graph ? specColumns(graph) : []), [graph]);
  const titleId = useId();
  const count = graph ? flatSteps(graph.steps).length : 0;
  return (
    <section className={`spec-graph${result.ok ? '' : ' spec-graph-stale'}`} aria-labelledby={titleId} data-testid="spec-graph" data-state={result.ok ? 'ok' : 'error'}>
      <h2 className="spec-graph-title" id={titleId}>
        Steps
        <span className="muted small">
          {count === 1 ? '1 step' : `${count} steps`}
          {graph?.mode === 'parallel' && ' · parallel mode: steps start when their when.steps allow'}
          {graph?.continueOnFail && ' · fail_fast: false for all steps'}
        </span>
      </h2>
      {!result.ok && (
        <button type="button" className="spec-graph-error small" onClick={() => onJump(result.error.line, result.error.column)} data-testid="spec-graph-error" data-line={result.error.line}>
          <span className="text-danger" aria-hidden="true">
            ✕
          </span>
          <span>
            <strong>Line {result.error.line}:</strong> {result.error.message}
            {graph && <span className="muted"> — the graph shows the last text that could be read.</span>}
          </span>
        </button>
      )}
      {columns.length === 0 ? (
        <p className="muted small">{result.ok ? 'No steps yet: add them under "steps:".' : ''}</p>
      ) : (
        <div className="graph" role="list" aria-label="Stages of the spec">
          {columns.map((c) => (
            <section className="graph-col" role="listitem" key={c.stage || 'steps'} aria-label={c.stage ? `Stage ${c.stage}` : 'Steps'}>
              <h3 className="graph-stage">{c.stage || 'Steps'}</h3>
              <ol className="graph-nodes">
                {c.nodes.map((n) => (
                  <li key={n.step.name}>
                    <Node node={n} onJump={onJump} />
                  </li>
                ))}
              </ol>
            </section>
          ))}
        </div>
      )}
    </section>
  );
}

function Node({ node, onJump }: { node: GraphNode<SpecStep>; onJump: (line: number) => void }) {
  if (node.children.length === 0) return <StepCard step={node.step} onJump={onJump} />;
  return (
    <div className="graph-group" data-testid={`spec-step-${node.step.name}`}>
      <StepCard step={node.step} onJump={onJump} group />
      <ul className="graph-children" aria-label={`In parallel in ${node.step.name}`}>
        {node.children.map((k) => (
          <li key={k.step.name}>
            <Node node={k} onJump={onJump} />
          </li>
        ))}
      </ul>
    </div>
  );
}

function StepCard({ step, onJump, group }: { step: SpecStep; onJump: (line: number) => void; group?: boolean }) {
  const marks = [...step.when.map((w) => ({ text: `when: ${w}`, cls: '' })), ...(step.continueOnFail ? [{ text: 'fail_fast: false', cls: ' step-mark-fail' }] : [])];
  return (
    <button
      type="button"
      className={`step${group ? ' step-group' : ''}`}
      onClick={() => onJump(step.line)}
      data-testid={group ? undefined : `spec-step-${step.name}`}
      title={`${step.title ? `${step.title} (${step.name})` : step.name}, line ${step.line}${marks.length ? ` — ${marks.map((m) => m.text).join('; ')}` : ''}. Go to the line.`}
    >
      <span className="step-main">
        <span className="step-name">
          {group && <span className="muted small">parallel · </span>}
          {step.title ?? step.name}
          {step.title && <span className="muted small"> {step.name}</span>}
        </span>
        {step.type !== 'freestyle' && step.type !== 'parallel' && <span className="step-meta muted small">{step.type}</span>}
        {marks.length > 0 && (
          <span className="step-marks">
            {marks.map((m) => (
              <span key={m.text} className={`step-mark${m.cls}`}>
                {m.text}
              </span>
            ))}
          </span>
        )}
      </span>
    </button>
  );
}
