import { describe, expect, it } from 'vitest';
import type { Pipeline } from '../api/types';
import { configFromForm, emptyForm, formFromPipeline, hasFormErrors, isDirty, validateForm } from './pipelineForm';

const pipeline: Pipeline = {
  id: 'pip_1',
  name: 'api',
  project: 'acme',
  fullName: 'acme/api',
  spec: "version: '1.0'\nsteps:\n  a:\n    commands: [echo]\n",
  config: { contexts: ['deploy'], variables: [{ key: 'TOKEN', value: '*****', encrypted: true }, { key: 'GO', value: '1.26' }], runnerLabels: { os: 'linux' }, concurrency: 2 },
  createdAt: '2026-01-01T00:00:00Z',
  updatedAt: '2026-01-01T00:00:00Z',
};

describe('pipeline form', () => {
  it('round-trips a pipeline through the form', () => {
    const f = formFromPipeline(pipeline);
    expect(f.concurrency).toBe('2');
    expect(configFromForm(f)).toEqual(pipeline.config);
    expect(isDirty(f, f)).toBe(false);
    // An empty row added and left blank is not a change.
    expect(isDirty({ ...f, variables: [...f.variables, { key: '', value: '' }] }, f)).toBe(false);
    expect(isDirty({ ...f, terminateOlder: true }, f)).toBe(true);
  });

  it('saves an encrypted value sent back masked (the server keeps it), but not the mask under a new key', () => {
    const f = formFromPipeline(pipeline);
    expect(hasFormErrors(validateForm(f, f))).toBe(false);
    const renamed = { ...f, variables: [{ ...f.variables[0], key: 'TOKEN2' }, f.variables[1]] };
    const e = validateForm(renamed, f);
    expect(e.variableRows?.[0]).toMatch(/Type the value of TOKEN2/);
    expect(hasFormErrors(e)).toBe(true);
    const typed = { ...f, variables: [{ key: 'TOKEN', value: 'new-secret', encrypted: true }, f.variables[1]] };
    expect(hasFormErrors(validateForm(typed, f))).toBe(false);
    // A variable just removed from encryption is not blocked (the user sees the mask as value).
    expect(hasFormErrors(validateForm({ ...f, variables: [f.variables[1]] }, f))).toBe(false);
  });

  it('checks numbers and names like the server', () => {
    const f = emptyForm();
    expect(validateForm({ ...f, concurrency: '-1' }).concurrency).toMatch(/not a number of builds/);
    expect(validateForm({ ...f, maxAttempts: '11' }).maxAttempts).toMatch(/out of range/);
    expect(validateForm({ ...f, maxAttempts: '' }).maxAttempts).toBeUndefined();
    expect(validateForm({ ...f, spec: '  ' }).spec).toMatch(/empty/);
    expect(validateForm({ ...f, runnerLabels: [{ key: 'bad key', value: 'x' }] }).labelRows?.[0]).toMatch(/not a label key/);
    expect(hasFormErrors(validateForm(f))).toBe(false);
    expect(configFromForm(f)).toEqual({});
  });
});
