import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import type { WorkflowNode } from '../api/workflows';
import { ApprovalFields, approvalGates, initialValues, resumeBody, waitingNodes, type Gate } from './ApprovalDialog';

const node = (over: Partial<WorkflowNode>): WorkflowNode => ({
  id: 'id',
  name: 'name',
  displayName: 'name',
  type: 'Pod',
  templateName: '',
  phase: 'Running',
  message: '',
  boundaryID: '',
  startedAt: null,
  finishedAt: null,
  children: null,
  podName: '',
  inputs: null,
  outputs: null,
  result: null,
  exitCode: null,
  inputArtifacts: null,
  outputArtifacts: null,
  supplied: null,
  ...over,
});

const gate: Gate = {
  id: 'gate-1',
  name: 'gate[0].approve',
  displayName: 'approve',
  supplied: [
    { name: 'decision', default: null, enum: ['approve', 'reject'], description: 'ship it?' },
    { name: 'reason', default: 'none', enum: [], description: '' },
    { name: 'ticket', default: null, enum: null, description: '' },
  ],
};

const render = (error?: unknown, values = initialValues(gate.supplied), message = '') =>
  renderToStaticMarkup(<ApprovalFields gate={gate} values={values} message={message} error={error} onValue={() => {}} onMessage={() => {}} />);

describe('approval gates', () => {
  it('are the waiting suspend nodes that ask for values; a finished or plain suspend node is not', () => {
    const nodes = [
      node({ id: 'a', name: 'wf.approve', displayName: 'approve', type: 'Suspend', supplied: gate.supplied }),
      node({ id: 'b', name: 'wf.hold', displayName: 'hold', type: 'Suspend', supplied: [] }),
      node({ id: 'c', name: 'wf.done', type: 'Suspend', phase: 'Succeeded', supplied: gate.supplied }),
      node({ id: 'd', name: 'wf.build', type: 'Pod', supplied: gate.supplied }),
    ];
    expect(waitingNodes(nodes).map((n) => n.id)).toEqual(['a', 'b']);
    expect(approvalGates(nodes)).toEqual([{ id: 'a', name: 'wf.approve', displayName: 'approve', supplied: gate.supplied }]);
  });

  it('start from each default, an only choice, else empty', () => {
    expect(initialValues([...gate.supplied, { name: 'only', default: null, enum: ['yes'], description: '' }])).toEqual({ decision: '', reason: 'none', ticket: '', only: 'yes' });
  });

  it('send the node, the values given and the message; an empty value is left to the server', () => {
    expect(resumeBody(gate, { decision: 'approve', reason: '', ticket: 'OPS-7' }, '  approved by ann ')).toEqual({
      node: 'gate[0].approve',
      parameters: { decision: 'approve', ticket: 'OPS-7' },
      message: 'approved by ann',
    });
    expect(resumeBody(gate, { decision: '', reason: '', ticket: '' }, '')).toEqual({ node: 'gate[0].approve' });
  });
});

describe('ApprovalFields', () => {
  it('offers a select for an enum (with a choice to make), a text field otherwise prefilled with its default, and a message', () => {
    const html = render();
    expect(html).toMatch(/<label[^>]*>decision \(required\)<\/label><select[^>]*>.*<option value="" selected="">Choose…<\/option><option value="approve">approve<\/option><option value="reject">reject<\/option><\/select>/);
    expect(html).toContain('ship it?');
    expect(html).toMatch(/<label[^>]*>reason<\/label><input type="text"[^>]*value="none"/);
    expect(html).toContain('Default: none');
    expect(html).toMatch(/<label[^>]*>ticket \(required\)<\/label><input type="text"[^>]*value=""/);
    expect(html).toMatch(/<label[^>]*>Message<\/label><input/);
    expect(html).not.toContain('aria-invalid');
    expect(html).not.toContain('role="alert"');
  });

  it('shows the value chosen selected', () => {
    expect(render(undefined, { decision: 'reject', reason: 'none', ticket: '' })).toContain('<option value="reject" selected="">reject</option>');
  });

  it('shows a refusal naming a parameter at that field', () => {
    const err = new ApiError({ code: 'invalid_argument', status: 400, field: 'parameters.decision', message: 'parameters.decision "maybe" is not one of [approve reject]' });
    const html = render(err);
    expect(html).toMatch(/<select[^>]*aria-invalid="true"/);
    expect(html).toMatch(/class="field-error">parameters.decision &quot;maybe&quot; is not one of \[approve reject\]<\/div>/);
    expect(html.match(/aria-invalid="true"/g)).toHaveLength(1);
    expect(html).not.toContain('role="alert"');
  });

  it('shows any other refusal above the buttons, with the field it names', () => {
    const err = new ApiError({ code: 'invalid_argument', status: 400, field: 'node', message: 'node "x" is not a suspend node waiting to be resumed (waiting: none)' });
    const html = render(err);
    expect(html).toMatch(/role="alert"><strong class="error-field">node: <\/strong>node &quot;x&quot; is not a suspend node/);
    expect(html).not.toContain('aria-invalid');
  });
});
