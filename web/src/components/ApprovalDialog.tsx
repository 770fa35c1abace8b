// The answer to an approval gate (docs/webui.md): a Workflow waiting at a suspend node whose
// template's output parameters say `valueFrom: {supplied: {}}` is resumed with values for them.
// The dialog lists each one (a select when it has an enum, a text field otherwise, prefilled
// with its default) and an optional message, and sends {node, parameters, message} to the
// app-proxy's resume route; the server's refusal (400 naming node or parameters.NAME) is shown
// at the field it names, or above the buttons.
import { useState } from 'react';
import { ApiError, fieldError } from '../api/client';
import type { WorkflowNode, WorkflowResumeRequest, WorkflowSuppliedParameter } from '../api/workflows';
import { Dialog } from './Dialog';
import { Field } from './Field';
import { ErrorNote } from './States';

/** A gate: a suspend node waiting to be resumed that asks for values. */
export type Gate = Pick<WorkflowNode, 'id' | 'name' | 'displayName'> & { supplied: WorkflowSuppliedParameter[] };

/** The suspend nodes waiting to be resumed. */
export function waitingNodes<N extends Pick<WorkflowNode, 'type' | 'phase'>>(nodes: N[]): N[] {
  return nodes.filter((n) => n.type === 'Suspend' && n.phase === 'Running');
}

/** The waiting suspend nodes that ask for values when they are resumed. */
export function approvalGates(nodes: WorkflowNode[]): Gate[] {
  return waitingNodes(nodes)
    .filter((n) => (n.supplied ?? []).length > 0)
    .map((n) => ({ id: n.id, name: n.name, displayName: n.displayName, supplied: n.supplied ?? [] }));
}

/** The form's first values: each parameter's default, else its only allowed value, else empty. */
export function initialValues(params: WorkflowSuppliedParameter[]): Record<string, string> {
  return Object.fromEntries(params.map((p) => [p.name, p.default ?? ((p.enum ?? []).length === 1 ? p.enum![0] : '')]));
}

/**
 * The resume body. A parameter left empty is not sent: the server then takes its default, or
 * refuses it naming parameters.NAME when it has none (so a value is not invented here).
 */
export function resumeBody(gate: Gate, values: Record<string, string>, message: string): WorkflowResumeRequest {
  const body: WorkflowResumeRequest = { node: gate.name };
  const parameters = Object.fromEntries(gate.supplied.filter((p) => (values[p.name] ?? '') !== '').map((p) => [p.name, values[p.name]]));
  if (Object.keys(parameters).length > 0) body.parameters = parameters;
  if (message.trim() !== '') body.message = message.trim();
  return body;
}

/** The fields of one gate; error is the server's refusal, shown at the field it names. */
export function ApprovalFields({
  gate,
  values,
  message,
  error,
  onValue,
  onMessage,
}: {
  gate: Gate;
  values: Record<string, string>;
  message: string;
  error?: unknown;
  onValue: (name: string, value: string) => void;
  onMessage: (m: string) => void;
}) {
  // A refusal that names one of these fields is shown there; any other above the buttons.
  const atField = error instanceof ApiError && (error.field === 'message' || gate.supplied.some((p) => error.field === `parameters.${p.name}`));
  return (
    <div data-testid="approval-fields">
      {gate.supplied.map((p) => {
        const label = p.name + (p.default === null ? ' (required)' : '');
        const hint = [p.description, p.default !== null && `Default: ${p.default === '' ? '(empty)' : p.default}`].filter(Boolean).join(' · ') || undefined;
        const err = fieldError(error, `parameters.${p.name}`);
        const v = values[p.name] ?? '';
        return (p.enum ?? []).length > 0 ? (
          <Field key={p.name} label={label} hint={hint} error={err}>
            <select value={v} onChange={(e) => onValue(p.name, e.target.value)}>
              {!(p.enum ?? []).includes(v) && <option value={v}>{v === '' ? 'Choose…' : v}</option>}
              {p.enum!.map((o) => (
                <option key={o} value={o}>
                  {o}
                </option>
              ))}
            </select>
          </Field>
        ) : (
          <Field key={p.name} label={label} hint={hint} error={err}>
            <input type="text" value={v} onChange={(e) => onValue(p.name, e.target.value)} autoComplete="off" spellCheck={false} />
          </Field>
        );
      })}
      <Field label="Message" hint="Kept as the step's message (default: Resumed)." error={fieldError(error, 'message')}>
        <input type="text" value={message} onChange={(e) => onMessage(e.target.value)} autoComplete="off" />
      </Field>
      {error !== undefined && !atField && <ErrorNote error={error} />}
    </div>
  );
}

/** Resumes one of gates with the values the user gives; send posts the body (the api client). */
export function ApprovalDialog({
  workflow,
  gates,
  send,
  onDone,
  onClose,
}: {
  workflow: string;
  gates: Gate[];
  send: (body: WorkflowResumeRequest) => Promise<unknown>;
  onDone: () => void;
  onClose: () => void;
}) {
  const [id, setId] = useState(gates[0]?.id ?? '');
  const gate = gates.find((g) => g.id === id) ?? gates[0];
  const [values, setValues] = useState(() => initialValues(gate?.supplied ?? []));
  const [message, setMessage] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  if (!gate) return null;
  const pick = (next: string) => {
    setId(next);
    setValues(initialValues(gates.find((g) => g.id === next)?.supplied ?? []));
    setError(undefined);
  };
  const submit = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await send(resumeBody(gate, values, message));
      onDone();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog
      open
      title={`Resume ${workflow}?`}
      onClose={onClose}
      busy={busy}
      footer={
        <>
          <button type="button" className="button" onClick={onClose} disabled={busy}>
            Cancel
          </button>
          <button type="submit" form="approval-form" className="button button-primary" disabled={busy}>
            {busy ? 'Working…' : 'Resume'}
          </button>
        </>
      }
    >
      <form
        id="approval-form"
        aria-label="Approval"
        onSubmit={(e) => {
          e.preventDefault();
          if (!busy) void submit();
        }}
      >
        {gates.length > 1 ? (
          <Field label="Step" hint="The waiting step this answers; the others keep waiting.">
            <select value={gate.id} onChange={(e) => pick(e.target.value)}>
              {gates.map((g) => (
                <option key={g.id} value={g.id}>
                  {g.displayName || g.name}
                </option>
              ))}
            </select>
          </Field>
        ) : (
          <p className="confirm-text">
            The step <strong>{gate.displayName || gate.name}</strong> waits for these values; it goes on with them.
          </p>
        )}
        <ApprovalFields
          key={gate.id}
          gate={gate}
          values={values}
          message={message}
          error={error}
          onValue={(k, v) => setValues((old) => ({ ...old, [k]: v }))}
          onMessage={setMessage}
        />
      </form>
    </Dialog>
  );
}
