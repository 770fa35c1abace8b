import { describe, expect, it } from 'vitest';
import { wordTone } from './tone';

describe('wordTone', () => {
  it('colours the status words the API returns, and nothing else', () => {
    expect(wordTone('active')).toBe('success');
    expect(wordTone('denied')).toBe('warning');
    expect(wordTone('failure')).toBe('danger');
    expect(wordTone('admin')).toBe('info');
    expect(wordTone('member')).toBe('neutral');
    expect(wordTone('constructor')).toBe('neutral');
    expect(wordTone('')).toBe('neutral');
  });
});
