import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import type { ProductView } from '../api/products';
import { ProductFields, ProductMatrix } from './Products';

const view = (name: string, defined: boolean, patterns: string[] = []): ProductView => ({
  product: { name, patterns, defined, applications: 0 },
  environments: [],
  promotions: [],
  unplaced: [],
});

describe('Products', () => {
  const views = [view('shop', true, ['shop-*', 'web']), view('pay', false)];
  const manage = { onEdit: () => {}, onDelete: () => {} };

  it('offers Edit and Delete of definitions to admins, not of products only annotations name', () => {
    const html = renderToStaticMarkup(<ProductMatrix environments={[]} views={views} manage={manage} />);
    expect(html).toContain('data-testid="product-edit-shop"');
    expect(html).toContain('data-testid="product-delete-shop"');
    expect(html).not.toContain('product-edit-pay');
    expect(html).not.toContain('product-delete-pay');
    expect(html).toContain('by annotation');
    expect(html).toMatch(/data-testid="product-patterns-shop"><code class="chip">shop-\*<\/code><code class="chip">web<\/code>/);
  });

  it('offers nothing to change to others', () => {
    const html = renderToStaticMarkup(<ProductMatrix environments={[]} views={views} />);
    expect(html).toContain('data-testid="product-shop"');
    expect(html).not.toContain('product-edit-');
    expect(html).not.toContain('product-delete-');
  });

  it("shows the server's patterns[i] error at the patterns and others below the form", () => {
    const draft = { name: 'shop', patterns: 'shop-*\n[x' };
    const fields = (server: unknown) => renderToStaticMarkup(<ProductFields draft={draft} onChange={() => {}} editing={false} local={{}} server={server} />);
    const bad = fields(new ApiError({ code: 'invalid_argument', status: 400, field: 'patterns[1]', message: 'patterns[1]: "[x" is not a glob' }));
    expect(bad).toMatch(/class="field-error">patterns\[1\]: &quot;\[x&quot; is not a glob</);
    expect(bad).toContain('aria-invalid="true"');
    expect(bad).not.toContain('product-form-error');
    const conflict = fields(new ApiError({ code: 'conflict', status: 409, message: 'product shop: already exists' }));
    expect(conflict).toContain('data-testid="product-form-error"');
    expect(conflict).not.toContain('field-error');
    expect(fields(undefined)).toContain('2 of at most 50');
  });
});
