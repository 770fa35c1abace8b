import { describe, expect, test } from 'vitest';
import { atLimit, resourceLabel, useShare, useText } from './billing';

describe('plan limits as the page shows them', () => {
  test('use of a limit, unlimited, per runtime and per month', () => {
    expect(useText({ resource: 'runners', limit: 5, used: 3 })).toBe('3 of 5');
    expect(useText({ resource: 'users', limit: -1, used: 1200 })).toBe('1,200 of unlimited');
    expect(useText({ resource: 'clusters-per-runtime', limit: 2, used: -1 })).toBe('up to 2 per runtime');
    expect(useText({ resource: 'clusters-per-runtime', limit: -1, used: -1 })).toBe('unlimited');
    expect(useText({ resource: 'build-minutes', limit: 300, used: 12, period: 'month' })).toBe('12 of 300 this month');
  });

  test('share and the limit reached', () => {
    expect(useShare({ resource: 'runners', limit: 4, used: 1 })).toBe(25);
    expect(useShare({ resource: 'runners', limit: 2, used: 3 })).toBe(100);
    expect(useShare({ resource: 'hosted-runtimes', limit: 0, used: 0 })).toBe(100);
    expect(useShare({ resource: 'users', limit: -1, used: 3 })).toBeUndefined();
    expect(atLimit({ resource: 'runners', limit: 2, used: 2 })).toBe(true);
    expect(atLimit({ resource: 'runners', limit: 2, used: 3 })).toBe(true);
    expect(atLimit({ resource: 'runners', limit: 2, used: 1 })).toBe(false);
    expect(atLimit({ resource: 'users', limit: -1, used: 9 })).toBe(false);
  });

  test('labels', () => {
    expect(resourceLabel('concurrent-builds')).toBe('Concurrent builds');
    expect(resourceLabel('gpus')).toBe('gpus');
  });
});
