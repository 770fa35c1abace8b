import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { ProductApplication, ProductView } from '../api/products';
import { ProductGrid, PromotionPanel } from './Environments';

const app = (name: string, revision: string, digest: string): ProductApplication => ({
  runtime: 'edge',
  name,
  cluster: 'prod',
  namespace: 'shop',
  health: 'Healthy',
  sync: 'Synced',
  revision,
  images: [{ repository: 'registry.example/shop', tags: ['1.1'], digest, commits: [], issues: [] }],
  deployedAt: '2024-05-01T12:00:00Z',
});

const view: ProductView = {
  product: { name: 'shop', patterns: [], defined: false, applications: 2 },
  environments: [
    { environment: { name: 'staging', kind: 'non-prod', order: 1, targets: [], createdAt: '', updatedAt: '' }, applications: [app('shop-staging', 'a'.repeat(40), 'sha256:' + 'a'.repeat(64))] },
    { environment: { name: 'production', kind: 'prod', order: 2, targets: [], createdAt: '', updatedAt: '' }, applications: [] },
  ],
  promotions: [
    {
      from: 'staging',
      to: 'production',
      fromRevisions: ['a'.repeat(40)],
      toRevisions: [],
      images: [{ repository: 'registry.example/shop', from: 'sha256:' + 'a'.repeat(64), to: '' }],
      commits: [{ sha: 'c'.repeat(40), message: 'add cart' }],
      issues: [{ key: 'SHOP-12' }],
    },
  ],
  unplaced: [],
};

describe('Environments view', () => {
  it('shows each environment in order with its applications, versions and health', () => {
    const html = renderToStaticMarkup(<ProductGrid view={view} />);
    expect(html.indexOf('data-testid="env-staging"')).toBeLessThan(html.indexOf('data-testid="env-production"'));
    expect(html).toContain('shop-staging');
    expect(html).toContain('aaaaaaaaaaaa</code>');
    expect(html).toContain('registry.example/shop:1.1@aaaaaaaaaaaa');
    expect(html).toContain('Healthy');
    expect(html).toContain('Not deployed here');
  });

  it('shows what promoting would change: images, commits and issues', () => {
    const html = renderToStaticMarkup(<PromotionPanel p={view.promotions[0]} />);
    expect(html).toContain('Promote staging → production');
    expect(html).toContain('none → aaaaaaaaaaaa');
    expect(html).toContain('ccccccc</code> add cart');
    expect(html).toContain('SHOP-12');
  });

  it('says when promotion would change nothing', () => {
    const html = renderToStaticMarkup(
      <PromotionPanel p={{ from: 'a', to: 'b', fromRevisions: ['r'], toRevisions: ['r'], images: [], commits: [], issues: [] }} />,
    );
    expect(html).toContain('Nothing would change');
  });
});
