// Products (docs/products.md): each product with its applications per environment — what runs
// where at a glance — linking to the Environments view of one product for its versions and the
// promotion diff.
import { environments as environmentsApi, products as productsApi, type Environment, type ProductApplication, type ProductView } from '../api/products';
import { Link, href } from '../app/router';
import { Badge } from '../components/Badge';
import { PageHeader } from '../components/PageHeader';
import { TableScroll } from '../components/ResourceTable';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { shortRevision } from '../lib/dora';
import { healthTone } from '../lib/runtimes';
import { useResource } from '../lib/useResource';

/** The most products whose views the page asks for (one request each). */
const MAX_PRODUCTS = 50;

function AppCell({ apps }: { apps: ProductApplication[] }) {
  if (apps.length === 0) return <span className="muted">—</span>;
  return (
    <ul className="plain-list">
      {apps.map((a) => (
        <li key={`${a.runtime}/${a.name}`} data-testid={`products-app-${a.runtime}-${a.name}`}>
          <Link to={`/applications/${encodeURIComponent(a.runtime)}/${encodeURIComponent(a.name)}`}>{a.name}</Link> <Badge tone={healthTone(a.health)}>{a.health || 'Unknown'}</Badge>{' '}
          <code title={a.revision}>{shortRevision(a.revision)}</code>
        </li>
      ))}
    </ul>
  );
}

/** Products as rows, environments (in promotion order) as columns, applications in the cells. */
export function ProductMatrix({ environments, views }: { environments: Environment[]; views: ProductView[] }) {
  const anyUnplaced = views.some((v) => v.unplaced.length > 0);
  return (
    <TableScroll>
      <table className="table products-matrix" data-testid="products-matrix">
        <caption className="visually-hidden">Products and their applications per environment</caption>
        <thead>
          <tr>
            <th scope="col">Product</th>
            {environments.map((e) => (
              <th key={e.name} scope="col">
                {e.name} <Badge tone={e.kind === 'prod' ? 'danger' : 'neutral'}>{e.kind}</Badge>
              </th>
            ))}
            {anyUnplaced && <th scope="col">In no environment</th>}
          </tr>
        </thead>
        <tbody>
          {views.map((v) => (
            <tr key={v.product.name} data-testid={`product-${v.product.name}`}>
              <th scope="row">
                <Link to={href('/environments', { product: v.product.name })}>{v.product.name}</Link>
                <div className="muted small">
                  {v.product.applications} application{v.product.applications === 1 ? '' : 's'}
                  {v.product.defined ? '' : ' · by annotation'}
                </div>
              </th>
              {environments.map((e) => (
                <td key={e.name}>
                  <AppCell apps={v.environments.find((x) => x.environment.name === e.name)?.applications ?? []} />
                </td>
              ))}
              {anyUnplaced && (
                <td>
                  <AppCell apps={v.unplaced} />
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </TableScroll>
  );
}

export default function Products() {
  const data = useResource(async (signal) => {
    const [envs, list] = await Promise.all([environmentsApi.list(signal), productsApi.list(signal)]);
    const names = list.items.slice(0, MAX_PRODUCTS).map((p) => p.name);
    const views = await Promise.all(names.map((n) => productsApi.get(n, signal)));
    return { environments: envs.items, views, more: list.items.length - names.length };
  }, []);
  const d = data.data;
  return (
    <div data-page="products" data-ready={d ? 'true' : undefined}>
      <PageHeader title="Products">
        Each product's applications in each environment. Open a product for the versions it runs and what promoting would change (<Link to="/environments">Environments</Link>).
      </PageHeader>
      {data.error !== undefined ? (
        <ErrorState error={data.error} onRetry={() => data.reload()} />
      ) : !d ? (
        <LoadingRows label="Loading products" rows={4} />
      ) : d.views.length === 0 ? (
        <EmptyState title="No products">
          Annotate applications with <code>codefresh.io/product</code>, or define a product with name patterns (<code>freshet product create</code>).
        </EmptyState>
      ) : (
        <>
          <ProductMatrix environments={d.environments} views={d.views} />
          {d.more > 0 && <p className="muted small">and {d.more} more products: open them from Environments.</p>}
        </>
      )}
    </div>
  );
}
