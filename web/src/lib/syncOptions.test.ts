import { describe, expect, it } from 'vitest';
import { SYNC_OPTION_CHOICES, syncOptionStrings } from './syncOptions';

describe('sync options', () => {
  it('sends nothing when nothing is chosen', () => {
    expect(syncOptionStrings(new Set())).toEqual([]);
  });
  it('turns the checked choices into Argo CD option strings, schema validation off as Validate=false', () => {
    expect(syncOptionStrings(new Set(['Validate', 'PruneLast', 'CreateNamespace']))).toEqual(['PruneLast=true', 'Validate=false', 'CreateNamespace=true']);
  });
  it('adds the prune propagation policy only when it is not the default', () => {
    expect(syncOptionStrings(new Set(), 'orphan')).toEqual(['PrunePropagationPolicy=orphan']);
    expect(syncOptionStrings(new Set(['Replace']), 'foreground')).toEqual(['Replace=true']);
  });
  it('offers each key once', () => {
    const keys = SYNC_OPTION_CHOICES.map((c) => c.key);
    expect(new Set(keys).size).toBe(keys.length);
  });
});
