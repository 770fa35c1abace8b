import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { AppSummary } from '../api/apps';
import { AppTile } from './AppTile';

const app: AppSummary = {
  id: 'a1',
  runtime: 'local',
  name: 'guestbook',
  project: 'shop',
  labels: [],
  repoUrl: 'https://git.example.com/apps.git',
  path: 'guestbook',
  targetRevision: 'main',
  destination: { server: 'https://10.0.0.1:6443', namespace: 'web' },
  autoSync: true,
  autoSyncDisabled: false,
  syncStatus: 'OutOfSync',
  healthStatus: 'Degraded',
  revision: '0123456789abcdef0123456789abcdef01234567',
  reconciledAt: new Date(Date.now() - 120_000).toISOString(),
  problem: 'ComparisonError: rpc error',
};
const noop = () => {};
const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ').trim();
const button = (html: string, action: string) => {
  const m = html.match(new RegExp(`<button[^>]*data-action="${action}"[^>]*>.*?</button>`));
  if (!m) throw new Error(`no ${action} in ${html}`);
  return m[0];
};

describe('AppTile', () => {
  it('shows what an Argo CD tile does: name, project and runtime, badges, source, destination, when', () => {
    const html = renderToStaticMarkup(<AppTile a={app} clusters={[{ name: 'prod', server: 'https://10.0.0.1:6443' }]} canWrite onAction={noop} />);
    expect(html).toContain('data-testid="app-tile-local-guestbook"');
    expect(html).toContain('data-health="Degraded"');
    expect(html).toContain('href="/applications/local/guestbook"');
    const t = text(html);
    for (const want of ['guestbook', 'shop · local', 'Degraded', 'OutOfSync', 'Comparison error', 'https://git.example.com/apps.git', 'guestbook', 'main 0123456', 'prod / web', '2 minutes ago']) expect(t).toContain(want);
  });

  it('names its buttons with the application, from their text', () => {
    const html = renderToStaticMarkup(<AppTile a={app} canWrite onAction={noop} />);
    expect(text(button(html, 'sync'))).toBe('Sync guestbook');
    expect(text(button(html, 'refresh'))).toBe('Refresh guestbook');
    expect(button(html, 'sync')).not.toContain('aria-label');
    expect(button(html, 'sync')).not.toContain('disabled');
  });

  it('waits while one runs, and lets a viewer look only', () => {
    const busy = renderToStaticMarkup(<AppTile a={app} canWrite busy="sync" onAction={noop} />);
    expect(button(busy, 'sync')).toContain('aria-busy="true"');
    expect(button(busy, 'refresh')).toContain('disabled');
    // The spinner is hidden: the name stays "Sync guestbook".
    expect(text(button(busy, 'sync'))).toBe('Sync guestbook');
    const viewer = renderToStaticMarkup(<AppTile a={app} canWrite={false} onAction={noop} />);
    expect(button(viewer, 'sync')).toContain('disabled');
    expect(button(viewer, 'refresh')).toContain('title="Your role (viewer) can look but not sync or refresh"');
  });
});
