// Products (docs/products.md): each product with its applications per environment — what runs
// where at a glance — linking to the Environments view of one product for its versions and the
// promotion diff. Admins add product definitions (a name and app-name patterns), edit their
// patterns and delete them here (docs/webui.md).
import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { environments as environmentsApi, products as productsApi, type Environment, type Product, type ProductApplication, type ProductView } from '../api/products';
import { Link, href } from '../app/router';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Field } from '../components/Field';
import { FormDialog } from '../components/FormDialog';
import { PageHeader } from '../components/PageHeader';
import { TableScroll } from '../components/ResourceTable';
import { RowDangerButton } from '../components/RowDangerButton';
import { EmptyState, ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import { MAX_PATTERNS, newProductDraft, parsePatterns, patternsError, productDraft, productRequest, type FormErrors, type ProductDraft } from '../lib/productForms';
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

/** Edit and Delete of a product definition; a product only annotations name has none (the API refuses both). */
function ProductActions({ product, onEdit, onDelete }: { product: Product; onEdit: (p: Product) => void; onDelete: (p: Product) => void }) {
  if (!product.defined) return null;
  return (
    <div className="product-actions">
      <button type="button" className="button button-small" onClick={() => onEdit(product)} aria-label={`Edit product ${product.name}`} data-testid={`product-edit-${product.name}`}>
        Edit
      </button>{' '}
      <span data-testid={`product-delete-${product.name}`}>
        <RowDangerButton label="Delete" ariaLabel={`Delete product ${product.name}`} onClick={() => onDelete(product)} />
      </span>
    </div>
  );
}

export interface ProductManage {
  onEdit: (p: Product) => void;
  onDelete: (p: Product) => void;
}

/**
 * Products as rows, environments (in promotion order) as columns, applications in the cells.
 * manage: the caller is an admin; defined products get Edit and Delete.
 */
export function ProductMatrix({ environments, views, manage }: { environments: Environment[]; views: ProductView[]; manage?: ProductManage }) {
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
                {v.product.patterns.length > 0 && (
                  <div className="chips" data-testid={`product-patterns-${v.product.name}`}>
                    {v.product.patterns.map((g) => (
                      <code key={g} className="chip">
                        {g}
                      </code>
                    ))}
                  </div>
                )}
                {manage && <ProductActions product={v.product} onEdit={manage.onEdit} onDelete={manage.onDelete} />}
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

/**
 * The fields of the product form: the name (read-only when editing) and the app-name patterns,
 * one per line. A 400 shows at the field it names (patterns[1] at the patterns), else below.
 */
export function ProductFields({ draft, onChange, editing, local, server }: { draft: ProductDraft; onChange: (d: ProductDraft) => void; editing: boolean; local: FormErrors; server: unknown }) {
  const nameErr = local.name ?? fieldError(server, 'name');
  const patErr = local.patterns ?? patternsError(server);
  const n = parsePatterns(draft.patterns).length;
  return (
    <>
      <Field label="Name" error={nameErr} hint={editing ? 'The name cannot change.' : "1–63 lower-case letters, digits and '-'; applications annotated codefresh.io/product with it join too."}>
        <input type="text" name="name" value={draft.name} readOnly={editing} onChange={(e) => onChange({ ...draft, name: e.target.value })} autoComplete="off" spellCheck={false} data-testid="product-name" />
      </Field>
      <Field
        label="Application name patterns"
        error={patErr}
        hint={`One glob per line (shop-*, *-checkout): applications whose name matches join the product unless an annotation names another. ${n} of at most ${MAX_PATTERNS}.`}
      >
        <textarea name="patterns" rows={5} value={draft.patterns} onChange={(e) => onChange({ ...draft, patterns: e.target.value })} spellCheck={false} data-testid="product-patterns" />
      </Field>
      {server !== undefined && !nameErr && !patErr && (
        <div data-testid="product-form-error">
          <ErrorNote error={server} />
        </div>
      )}
    </>
  );
}

/** Add (no product) or edit a product definition; closes only when the server has taken it. */
function ProductDialog({ product, onClose, onSaved }: { product?: Product; onClose: () => void; onSaved: (p: Product) => void }) {
  const editing = !!product;
  const [draft, setDraft] = useState<ProductDraft>(() => (product ? productDraft(product) : newProductDraft()));
  const [local, setLocal] = useState<FormErrors>({});
  const [server, setServer] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    const { body, errors } = productRequest(draft);
    setLocal(errors);
    setServer(undefined);
    if (!body) return;
    setBusy(true);
    try {
      const saved = editing ? await productsApi.update(body) : await productsApi.create(body);
      onSaved(saved);
      onClose();
    } catch (e) {
      setServer(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog
      title={editing ? `Edit product ${product.name}` : 'Add product'}
      onClose={onClose}
      busy={busy}
      formId="product-form"
      submitLabel={editing ? 'Save product' : 'Add product'}
      busyLabel="Saving…"
      onSubmit={submit}
    >
      <div data-testid="product-form">
        <ProductFields draft={draft} onChange={setDraft} editing={editing} local={local} server={server} />
      </div>
    </FormDialog>
  );
}

export default function Products() {
  const me = useMe();
  const admin = me.role === 'admin';
  const [adding, setAdding] = useState(false);
  const [editing, setEditing] = useState<Product>();
  const [deleting, setDeleting] = useState<Product>();
  const [done, setDone] = useState<string>();
  const data = useResource(async (signal) => {
    const [envs, list] = await Promise.all([environmentsApi.list(signal), productsApi.list(signal)]);
    const names = list.items.slice(0, MAX_PRODUCTS).map((p) => p.name);
    const views = await Promise.all(names.map((n) => productsApi.get(n, signal)));
    return { environments: envs.items, views, more: list.items.length - names.length };
  }, []);
  const changed = (text: string) => {
    setDone(text);
    data.reload();
  };
  const d = data.data;
  return (
    <div data-page="products" data-ready={d ? 'true' : undefined}>
      <PageHeader
        title="Products"
        actions={
          admin && (
            <button type="button" className="button button-primary" onClick={() => setAdding(true)} data-testid="product-add">
              Add product
            </button>
          )
        }
      >
        Each product's applications in each environment. Open a product for the versions it runs and what promoting would change (<Link to="/environments">Environments</Link>).
      </PageHeader>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {data.error !== undefined ? (
        <ErrorState error={data.error} onRetry={() => data.reload()} />
      ) : !d ? (
        <LoadingRows label="Loading products" rows={4} />
      ) : d.views.length === 0 ? (
        <EmptyState title="No products">
          Annotate applications with <code>codefresh.io/product</code>, or define a product with name patterns{admin ? ' (Add product)' : ''}.
        </EmptyState>
      ) : (
        <>
          <ProductMatrix environments={d.environments} views={d.views} manage={admin ? { onEdit: setEditing, onDelete: setDeleting } : undefined} />
          {d.more > 0 && <p className="muted small">and {d.more} more products: open them from Environments.</p>}
        </>
      )}
      {adding && <ProductDialog onClose={() => setAdding(false)} onSaved={(p) => changed(`Added product ${p.name}.`)} />}
      {editing && <ProductDialog key={editing.name} product={editing} onClose={() => setEditing(undefined)} onSaved={(p) => changed(`Saved product ${p.name}.`)} />}
      <ConfirmDialog
        open={!!deleting}
        title="Delete product"
        confirmLabel="Delete product"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await productsApi.remove(deleting.name);
          changed(`Deleted product ${deleting.name}.`);
        }}
      >
        <p>
          Delete the definition of <strong>{deleting?.name}</strong>? Applications that joined it by its patterns leave it; those annotated <code>codefresh.io/product: {deleting?.name}</code> keep
          naming it.
        </p>
      </ConfirmDialog>
    </div>
  );
}
