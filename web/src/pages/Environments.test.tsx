import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import type { ProductApplication, ProductView } from '../api/products';
import { EnvironmentFields, EnvironmentTable, ProductGrid, PromotionPanel } from './Environments';

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

describe('the environment form and list', () => {
  const draft = {
    name: 'staging',
    kind: 'non-prod',
    order: '1',
    targets: [
      { runtime: 'edge', cluster: '', namespace: '' },
      { runtime: '', cluster: '', namespace: '' },
      { runtime: '', cluster: 'prod', namespace: '[a-' },
    ],
  };
  const fields = (server: unknown, editing = false) =>
    renderToStaticMarkup(<EnvironmentFields draft={draft} onChange={() => {}} editing={editing} local={{}} server={server} />);

  it("shows the server's targets[1].namespace at the row it was sent from, marking that glob", () => {
    const html = fields(new ApiError({ code: 'invalid_argument', status: 400, field: 'targets[1].namespace', message: 'targets[1].namespace: "[a-" is not a glob' }));
    expect(html).toContain('data-testid="environment-target-2-error">targets[1].namespace: &quot;[a-&quot; is not a glob</div>');
    expect(html).not.toContain('environment-target-1-error');
    expect(html).toMatch(/aria-invalid="true"[^>]*data-testid="environment-target-2-namespace"/);
    expect(html).not.toMatch(/aria-invalid="true"[^>]*data-testid="environment-target-2-cluster"/);
    expect(html).not.toContain('environment-form-error');
  });

  it('shows other server errors below the form, the name read-only when editing', () => {
    const html = fields(new ApiError({ code: 'conflict', status: 409, message: 'environment staging: already exists' }), true);
    expect(html).toContain('data-testid="environment-form-error"');
    expect(html).toContain('already exists');
    expect(html).toMatch(/readOnly=""[^>]*data-testid="environment-name"|data-testid="environment-name"[^>]*readOnly/i);
  });

  it('lists environments with their targets, Edit and Delete only for admins', () => {
    const items = [{ name: 'staging', kind: 'non-prod', order: 1, targets: [{ cluster: 'staging', namespace: 'shop-*' }, { runtime: 'edge' }], createdAt: '', updatedAt: '' }];
    const admin = renderToStaticMarkup(<EnvironmentTable items={items} admin onEdit={() => {}} onDelete={() => {}} />);
    expect(admin).toContain('*/staging/shop-*');
    expect(admin).toContain('edge/*/*');
    expect(admin).toContain('data-testid="environment-edit-staging"');
    expect(admin).toContain('data-testid="environment-delete-staging"');
    const viewer = renderToStaticMarkup(<EnvironmentTable items={items} admin={false} onEdit={() => {}} onDelete={() => {}} />);
    expect(viewer).toContain('data-testid="environment-staging"');
    expect(viewer).not.toContain('environment-edit-');
    expect(viewer).not.toContain('environment-delete-');
  });
});
