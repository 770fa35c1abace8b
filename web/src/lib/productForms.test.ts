import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import type { Environment } from '../api/products';
import {
  environmentDraft,
  environmentErrorPlaced,
  environmentRequest,
  newEnvironmentDraft,
  parsePatterns,
  patternsError,
  productDraft,
  productRequest,
  targetOfField,
  type EnvironmentDraft,
} from './productForms';

const env = (name: string, order: number, targets: Environment['targets'] = [{ cluster: 'c' }]): Environment => ({ name, kind: 'non-prod', order, targets, createdAt: '', updatedAt: '' });
const invalid = (field: string, message = `${field}: "x" is not valid`) => new ApiError({ code: 'invalid_argument', status: 400, field, message });

describe('the environment form', () => {
  it('starts a new environment after the last one in the promotion order, with one empty target', () => {
    expect(newEnvironmentDraft([])).toEqual({ name: '', kind: 'non-prod', order: '1', targets: [{ runtime: '', cluster: '', namespace: '' }] });
    expect(newEnvironmentDraft([env('qa', 1), env('prod', 7), env('staging', 3)]).order).toBe('8');
    expect(newEnvironmentDraft([env('last', 1000)]).order).toBe('1000');
  });

  it('edits an environment as it is, missing globs as empty fields', () => {
    const d = environmentDraft({ ...env('staging', 2, [{ runtime: 'edge', namespace: 'shop-*' }]), kind: 'prod' });
    expect(d).toEqual({ name: 'staging', kind: 'prod', order: '2', targets: [{ runtime: 'edge', cluster: '', namespace: 'shop-*' }] });
    expect(environmentDraft(env('empty', 0, [])).targets).toHaveLength(1);
  });

  it('sends trimmed globs, leaves out empty ones and wholly empty rows', () => {
    const d: EnvironmentDraft = {
      name: 'staging',
      kind: 'prod',
      order: ' 2 ',
      targets: [
        { runtime: '', cluster: '', namespace: '' },
        { runtime: ' edge ', cluster: '', namespace: 'shop-*' },
        { runtime: '', cluster: 'prod-*', namespace: '' },
      ],
    };
    expect(environmentRequest(d)).toEqual({ body: { name: 'staging', kind: 'prod', order: 2, targets: [{ runtime: 'edge', namespace: 'shop-*' }, { cluster: 'prod-*' }] }, errors: {} });
  });

  it('refuses what the server would before sending: the name, kind, order and no target, each at its field', () => {
    const r = environmentRequest({ name: 'Bad Name', kind: 'production', order: '-1', targets: [{ runtime: ' ', cluster: '', namespace: '' }] });
    expect(r.body).toBeUndefined();
    expect(Object.keys(r.errors).sort()).toEqual(['kind', 'name', 'order', 'targets']);
    expect(r.errors.name).toContain('"Bad Name" is not a name');
    for (const order of ['', '1.5', '1001', 'x', '1e3']) expect(environmentRequest({ name: 'qa', kind: 'prod', order, targets: [{ runtime: 'a', cluster: '', namespace: '' }] }).errors.order, order).toBeDefined();
    expect(environmentRequest({ name: 'qa', kind: 'prod', order: '0', targets: [{ runtime: 'a', cluster: '', namespace: '' }] }).body?.order).toBe(0);
    expect(environmentRequest({ name: '', kind: 'prod', order: '1', targets: [{ runtime: 'a', cluster: '', namespace: '' }] }).errors.name).toBe('Name is required.');
  });

  it("maps the server's targets[i] to the row it came from, blank rows skipped", () => {
    const d: EnvironmentDraft = {
      name: 'qa',
      kind: 'prod',
      order: '1',
      targets: [
        { runtime: 'a', cluster: '', namespace: '' },
        { runtime: '', cluster: '', namespace: '' },
        { runtime: '', cluster: '', namespace: '[a-' },
      ],
    };
    expect(targetOfField(d, 'targets[1].namespace')).toEqual({ row: 2, key: 'namespace' });
    expect(targetOfField(d, 'targets[0]')).toEqual({ row: 0, key: undefined });
    expect(targetOfField(d, 'targets[2]')).toBeUndefined();
    expect(targetOfField(d, 'targets')).toBeUndefined();
    expect(targetOfField(d, 'targets[1].owner')).toBeUndefined();
    expect(targetOfField(d, undefined)).toBeUndefined();
    expect(environmentErrorPlaced(d, invalid('targets[1].namespace'))).toBe(true);
    expect(environmentErrorPlaced(d, invalid('order'))).toBe(true);
    expect(environmentErrorPlaced(d, invalid('targets[5]'))).toBe(false);
    expect(environmentErrorPlaced(d, new ApiError({ code: 'conflict', status: 409, message: 'environment qa: already exists' }))).toBe(false);
    expect(environmentErrorPlaced(d, new Error('network'))).toBe(false);
  });
});

describe('the product form', () => {
  it('reads patterns one per line or comma-separated, trimmed, without blanks or repeats', () => {
    expect(parsePatterns(' shop-*\n\n*-checkout, web \r\nshop-*\n')).toEqual(['shop-*', '*-checkout', 'web']);
    expect(parsePatterns('')).toEqual([]);
  });

  it('sends the name and patterns; refuses a bad name or too many patterns', () => {
    expect(productRequest({ name: 'shop', patterns: 'shop-*\nshop-web' })).toEqual({ body: { name: 'shop', patterns: ['shop-*', 'shop-web'] }, errors: {} });
    expect(productRequest({ name: 'shop', patterns: '' }).body).toEqual({ name: 'shop', patterns: [] });
    expect(productRequest({ name: 'Shop', patterns: 'a' }).errors.name).toContain('"Shop" is not a name');
    const many = Array.from({ length: 51 }, (_, i) => `app-${i}`).join('\n');
    expect(productRequest({ name: 'shop', patterns: many }).errors.patterns).toBe('At most 50 patterns.');
  });

  it('edits a definition with one pattern per line', () => {
    expect(productDraft({ name: 'shop', patterns: ['shop-*', 'web'], defined: true, applications: 2 })).toEqual({ name: 'shop', patterns: 'shop-*\nweb' });
  });

  it("shows the server's patterns errors at the patterns, others not", () => {
    expect(patternsError(invalid('patterns[1]', 'patterns[1]: "[x" is not a glob'))).toBe('patterns[1]: "[x" is not a glob');
    expect(patternsError(invalid('patterns'))).toBeDefined();
    expect(patternsError(invalid('name'))).toBeUndefined();
    expect(patternsError(invalid('patterns[1].x'))).toBeUndefined();
    expect(patternsError(new Error('x'))).toBeUndefined();
  });
});
