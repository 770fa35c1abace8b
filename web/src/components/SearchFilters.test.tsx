import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { SearchFilters } from './SearchFilters';

describe('SearchFilters', () => {
  it('draws a labelled search box per field, holding its value from the URL', () => {
    const html = renderToStaticMarkup(
      <SearchFilters path="/helm" label="Filter Helm releases" fields={[{ key: 'runtime', label: 'Runtime' }, { key: 'namespace', label: 'Namespace' }]} values={{ runtime: 'prod', namespace: '' }} />,
    );
    expect(html).toContain('aria-label="Filter Helm releases"');
    expect(html).toMatch(/Runtime[\s\S]*name="runtime" value="prod"/);
    expect(html).toMatch(/Namespace[\s\S]*name="namespace" value=""/);
    expect(html.match(/type="search"/g)).toHaveLength(2);
  });
});
