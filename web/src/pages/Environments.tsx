// The Environments view (docs/products.md): for a product, a grid of its applications per
// environment in promotion order — version, health, deployed-at — and the promotion diff
// between consecutive environments.
import { products, shortDigest, type ProductApplication, type ProductPromotion, type ProductView } from '../api/products';
import { href, navigate, useSearchParams } from '../app/router';
import { Badge } from '../components/Badge';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { healthTone } from '../lib/runtimes';
import { useResource } from '../lib/useResource';

function shortRev(rev: string): string {
  return rev.length > 12 ? rev.slice(0, 12) : rev || '—';
}

export function AppCard({ app }: { app: ProductApplication }) {
  return (
    <div className="card" data-testid={`product-app-${app.runtime}-${app.name}`}>
      <div className="strong">{app.name}</div>
      <div className="muted">
        {app.runtime} · {app.cluster}/{app.namespace}
      </div>
      <div>
        <Badge tone={healthTone(app.health)}>{app.health || 'Unknown'}</Badge> <Badge>{app.sync || 'Unknown'}</Badge>
      </div>
      <div>
        revision <code>{shortRev(app.revision)}</code>
      </div>
      {app.images.map((im) => (
        <div key={im.repository + im.digest}>
          <code>
            {im.repository}
            {im.tags?.length ? `:${im.tags[0]}` : ''}@{shortDigest(im.digest)}
          </code>
        </div>
      ))}
      <div className="muted">{app.deployedAt ? `deployed ${new Date(app.deployedAt).toLocaleString()}` : 'no deployment recorded'}</div>
    </div>
  );
}

export function PromotionPanel({ p }: { p: ProductPromotion }) {
  const same = p.images.length === 0 && p.commits.length === 0 && p.fromRevisions.join() === p.toRevisions.join();
  return (
    <section className="card" data-testid={`promotion-${p.from}-${p.to}`}>
      <h3>
        Promote {p.from} → {p.to}
      </h3>
      {same ? (
        <p className="muted">Nothing would change: both run the same version.</p>
      ) : (
        <>
          <p>
            revision {p.toRevisions.map(shortRev).join(', ') || '—'} → {p.fromRevisions.map(shortRev).join(', ') || '—'}
          </p>
          {p.images.length > 0 && (
            <ul>
              {p.images.map((c) => (
                <li key={c.repository}>
                  <code>{c.repository}</code> {shortDigest(c.to) || 'none'} → {shortDigest(c.from) || 'removed'}
                </li>
              ))}
            </ul>
          )}
          {p.commits.length > 0 && (
            <ul>
              {p.commits.map((c) => (
                <li key={c.sha}>
                  <code>{(c.sha ?? '').slice(0, 7)}</code> {c.message}
                </li>
              ))}
            </ul>
          )}
          {p.issues.length > 0 && <p>issues: {p.issues.map((i) => i.key).join(', ')}</p>}
        </>
      )}
    </section>
  );
}

/** The grid of one product: a column per environment, a card per application. */
export function ProductGrid({ view }: { view: ProductView }) {
  return (
    <div>
      <div className="env-grid" style={{ display: 'grid', gridTemplateColumns: `repeat(${Math.max(view.environments.length, 1)}, minmax(0, 1fr))`, gap: '1rem' }}>
        {view.environments.map((e) => (
          <div key={e.environment.name} data-testid={`env-${e.environment.name}`}>
            <h3>
              {e.environment.name} <Badge tone={e.environment.kind === 'prod' ? 'danger' : 'neutral'}>{e.environment.kind}</Badge>
            </h3>
            {e.applications.length === 0 ? <p className="muted">Not deployed here</p> : e.applications.map((a) => <AppCard key={`${a.runtime}/${a.name}`} app={a} />)}
          </div>
        ))}
      </div>
      {view.promotions.map((p) => (
        <PromotionPanel key={`${p.from}-${p.to}`} p={p} />
      ))}
      {view.unplaced.length > 0 && (
        <section>
          <h3>In no environment</h3>
          {view.unplaced.map((a) => (
            <AppCard key={`${a.runtime}/${a.name}`} app={a} />
          ))}
        </section>
      )}
    </div>
  );
}

function ProductSection({ name }: { name: string }) {
  const view = useResource((signal) => products.get(name, signal), [name]);
  if (view.error) return <ErrorState error={view.error} onRetry={() => view.reload()} />;
  if (!view.data) return <LoadingRows label={`Loading ${name}`} rows={3} />;
  return <ProductGrid view={view.data} />;
}

export default function Environments() {
  const list = useResource((signal) => products.list(signal), []);
  const chosen = useSearchParams().get('product') ?? undefined;
  const items = list.data?.items ?? [];
  const current = chosen ?? items[0]?.name;
  return (
    <div data-page="environments">
      <PageHeader title="Environments" />
      <p className="muted">
        What each product runs in each environment, and what promoting it would change. Applications join a product by the <code>codefresh.io/product</code> annotation
        or a product's name patterns (<code>freshet product create</code>); environments come from <code>freshet environment create</code>.
      </p>
      {list.error ? (
        <ErrorState error={list.error} onRetry={() => list.reload()} />
      ) : !list.data ? (
        <LoadingRows label="Loading products" rows={3} />
      ) : items.length === 0 ? (
        <EmptyState title="No products">Annotate applications with codefresh.io/product, or define a product with name patterns.</EmptyState>
      ) : (
        <>
          <label>
            Product{' '}
            <select value={current} onChange={(e) => navigate(href('/environments', { product: e.target.value }), { replace: true })}>
              {items.map((p) => (
                <option key={p.name} value={p.name}>
                  {p.name} ({p.applications})
                </option>
              ))}
            </select>
          </label>
          {current && <ProductSection name={current} />}
        </>
      )}
    </div>
  );
}
