import { describe, expect, it } from 'vitest';
import { grantableRoles, keyHint } from '../pages/APIKeys';
import { filterFromParams, formFromFilter, paramsFromForm } from './auditFilters';
import { safeNext } from './urls';
import * as v from './validate';
import { visibleRange } from './virtual';

describe('form validation', () => {
  it.each([
    ['alice@example.com', undefined],
    ['  bob@example.org ', undefined],
    ['', 'Email is required.'],
    ['bob', '"bob" is not a valid email address (like name@example.com).'],
    ['a@b', '"a@b" is not a valid email address (like name@example.com).'],
    ['Alice <a@example.com>', '"Alice <a@example.com>" is not a valid email address (like name@example.com).'],
  ])('email %j', (input, want) => expect(v.email(input)).toBe(want));

  it('names like the server: letters, digits, " ._-", starting with a letter or digit, at most 64', () => {
    expect(v.name('ci-deploy_1.0 key', 'Name')).toBeUndefined();
    expect(v.name('', 'Name')).toBe('Name is required.');
    expect(v.name('-x', 'Name')).toMatch(/starting with a letter or digit/);
    expect(v.name('a/b', 'Name')).toMatch(/may use letters/);
    expect(v.name('a'.repeat(65), 'Account name')).toBe('Account name is longer than 64 characters.');
  });

  it('passwords are 8 to 256 characters, or empty when optional', () => {
    expect(v.password('', true)).toBeUndefined();
    expect(v.password('')).toBe('Password is required.');
    expect(v.password('short')).toMatch(/8 to 256/);
    expect(v.password('long-enough')).toBeUndefined();
    expect(v.password('x'.repeat(257), true)).toMatch(/8 to 256/);
    expect(v.displayName('x'.repeat(101))).toMatch(/100/);
  });

  it('lifetimes are Go durations or 0', () => {
    for (const ok of ['720h', '1h30m', '0', '90m', '1.5h']) expect(v.expiresIn(ok)).toBeUndefined();
    for (const bad of ['30d', 'soon', '-1h', 'h']) expect(v.expiresIn(bad)).toMatch(/is not a duration/);
    expect(v.expiresIn(' ')).toMatch(/Give a lifetime/);
  });

  it('audit time bounds are RFC 3339 or a duration ago', () => {
    expect(v.timeBound('', 'Since')).toBeUndefined();
    expect(v.timeBound('24h', 'Since')).toBeUndefined();
    expect(v.timeBound('2026-01-02T15:04:05Z', 'Since')).toBeUndefined();
    expect(v.timeBound('2026-01-02T15:04:05.123+02:00', 'Since')).toBeUndefined();
    expect(v.timeBound('yesterday', 'Since')).toMatch(/^Since: "yesterday" is not a time/);
    expect(v.timeBound('2026-13-45T99:99:99Z', 'Since')).toMatch(/is not a time/);
    expect(v.timeBound('0', 'Since')).toMatch(/is not a time/);
  });
});

describe('audit filters in the URL', () => {
  it('round-trips presets and custom times', () => {
    const f = filterFromParams(new URLSearchParams('actor=a@example.com&action=user.*&result=denied&since=24h'));
    expect(f).toEqual({ actor: 'a@example.com', action: 'user.*', result: 'denied', since: '24h' });
    const form = formFromFilter(f);
    expect(form.since).toBe('24h');
    expect(paramsFromForm(form)).toEqual({ actor: 'a@example.com', action: 'user.*', result: 'denied', since: '24h' });
    const custom = formFromFilter(filterFromParams(new URLSearchParams('since=2026-01-02T00:00:00Z&result=bogus')));
    expect(custom).toMatchObject({ since: 'custom', sinceCustom: '2026-01-02T00:00:00Z', result: '' });
    expect(paramsFromForm({ actor: ' ', action: '', result: '', since: 'custom', sinceCustom: ' 36h ' })).toEqual({
      actor: undefined,
      action: undefined,
      result: undefined,
      since: '36h',
    });
  });
});

describe('small rules', () => {
  it('only follows same-app paths after login', () => {
    expect(safeNext('/users?after=x')).toBe('/users?after=x');
    for (const bad of [null, '', 'https://evil.example', '//evil.example', '/\\evil.example', '/login?next=/x']) expect(safeNext(bad)).toBe('/');
  });

  it('offers key roles up to the caller’s own', () => {
    expect(grantableRoles('admin')).toEqual(['admin', 'member', 'viewer']);
    expect(grantableRoles('member')).toEqual(['member', 'viewer']);
    expect(grantableRoles('viewer')).toEqual(['viewer']);
    expect(keyHint('ab12cd34')).toBe('fsk_ab12cd34_…');
  });

  it('renders only the rows in view plus overscan', () => {
    expect(visibleRange(0, 380, 38, 10_000, 8)).toEqual({ start: 0, end: 19 });
    expect(visibleRange(38 * 5000, 380, 38, 10_000, 8)).toEqual({ start: 4992, end: 5019 });
    expect(visibleRange(38 * 10_000, 380, 38, 10_000, 8)).toEqual({ start: 9992, end: 10_000 });
    expect(visibleRange(-50, 380, 38, 3, 8)).toEqual({ start: 0, end: 3 });
    expect(visibleRange(0, 380, 38, 0)).toEqual({ start: 0, end: 0 });
  });
});
