import { describe, expect, it } from 'vitest';
import { wordTone } from './tone';

describe('wordTone', () => {
  it('colours the status words the API returns, and nothing else', () => {
    const words = ['active', 'denied', 'failure', 'admin', 'member', 'constructor', ''];
    expect(words.map(wordTone)).toEqual(['success', 'warning', 'danger', 'info', 'neutral', 'neutral', 'neutral']);
  });
});
