import { describe, expect, test } from 'vitest';
import type { HubTemplate } from '../api/hub';
import { filterTemplates } from './Hub';

const t = (name: string, description: string, categories: string[], tags: string[] = []): HubTemplate => ({
  name,
  description,
  categories,
  tags,
  source: 'builtin',
  latestVersion: '0.1.0',
  versions: ['0.1.0'],
});

describe('filterTemplates', () => {
  const items = [t('git-clone', 'Clone a repository', ['git'], ['checkout']), t('notify', 'Send to Slack', ['notifications'], ['slack']), t('build-image', 'Build', ['build'])];
  test('search matches name, description, categories and tags, ignoring case', () => {
    expect(filterTemplates(items, 'SLACK', '').map((x) => x.name)).toEqual(['notify']);
    expect(filterTemplates(items, 'checkout', '').map((x) => x.name)).toEqual(['git-clone']);
    expect(filterTemplates(items, 'clone', '').map((x) => x.name)).toEqual(['git-clone']);
    expect(filterTemplates(items, '', '').length).toBe(3);
  });
  test('a category narrows, and combines with search', () => {
    expect(filterTemplates(items, '', 'build').map((x) => x.name)).toEqual(['build-image']);
    expect(filterTemplates(items, 'slack', 'build')).toEqual([]);
  });
});
