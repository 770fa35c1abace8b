import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { facetCounts } from '../lib/apps';
import { AppFacetBar } from './AppFacetBar';

const noop = () => {};
const button = (html: string, testid: string) => {
  const m = html.match(new RegExp(`<button[^>]*data-testid="${testid}"[^>]*>.*?</button>`));
  if (!m) throw new Error(`no ${testid} in ${html}`);
  return m[0];
};
const text = (b: string) => b.replace(/<span aria-hidden="true">[^<]*<\/span>/g, '').replace(/<[^>]+>/g, '').replace(/\s+/g, ' ').trim();

describe('AppFacetBar', () => {
  const counts = facetCounts(
    [
      { healthStatus: 'Healthy', syncStatus: 'Synced' },
      { healthStatus: 'Degraded', syncStatus: 'OutOfSync' },
      { healthStatus: 'Degraded', syncStatus: 'Synced' },
    ],
    {},
  );

  it('shows every status of both facets with its count, named by status and count', () => {
    const html = renderToStaticMarkup(<AppFacetBar counts={counts} onToggle={noop} />);
    expect(html.match(/<button/g)).toHaveLength(9);
    expect(text(button(html, 'facet-health-Degraded'))).toBe('Degraded 2');
    expect(text(button(html, 'facet-health-Missing'))).toBe('Missing 0');
    expect(text(button(html, 'facet-sync-OutOfSync'))).toBe('OutOfSync 1');
    expect(button(html, 'facet-sync-Synced')).toContain('data-count="2"');
    expect(html).toContain('<fieldset class="facet-group"><legend class="facet-title">Health</legend>');
    expect(html).toContain('<legend class="facet-title">Sync</legend>');
    // No aria-label: Playwright's getByLabel('Sync') stays the Sync filter's select.
    expect(html).not.toContain('aria-label');
  });

  it('presses the chosen statuses only', () => {
    const html = renderToStaticMarkup(<AppFacetBar counts={counts} health="Degraded" sync="Synced" onToggle={noop} />);
    expect(button(html, 'facet-health-Degraded')).toContain('aria-pressed="true"');
    expect(button(html, 'facet-sync-Synced')).toContain('aria-pressed="true"');
    expect(button(html, 'facet-health-Healthy')).toContain('aria-pressed="false"');
    expect(button(html, 'facet-sync-Unknown')).toContain('aria-pressed="false"');
  });

  it('without counts: the toggles still, no numbers', () => {
    const html = renderToStaticMarkup(<AppFacetBar onToggle={noop} />);
    expect(text(button(html, 'facet-health-Healthy'))).toBe('Healthy');
    expect(html).not.toContain('data-count');
  });
});
