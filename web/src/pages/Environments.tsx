// The Environments view (docs/products.md): for a product, a grid of its applications per
// environment in promotion order — version, health, deployed-at — and the promotion diff
// between consecutive environments. Above it the environments themselves, which admins add,
// edit and delete here (docs/webui.md).
import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { environments as environmentsApi, products, shortDigest, type Environment, type ProductApplication, type ProductPromotion, type ProductView } from '../api/products';
import { Link, href, navigate, useSearchParams } from '../app/router';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Field, Options } from '../components/Field';
import { FormDialog } from '../components/FormDialog';
import { PageHeader } from '../components/PageHeader';
import { DataTable, TableScroll, actionsColumn } from '../components/ResourceTable';
import { RowDangerButton } from '../components/RowDangerButton';
import { EmptyState, ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import {
  ENVIRONMENT_KINDS,
  MAX_ORDER,
  MAX_TARGETS,
  TARGET_KEYS,
  emptyTarget,
  environmentDraft,
  environmentErrorPlaced,
  environmentRequest,
  newEnvironmentDraft,
  targetOfField,
  type EnvironmentDraft,
  type FormErrors,
} from '../lib/productForms';
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

/** A target as the list shows it: its globs, * for any. */
export function targetText(t: { runtime?: string; cluster?: string; namespace?: string }): string {
  return `${t.runtime || '*'}/${t.cluster || '*'}/${t.namespace || '*'}`;
}

/** The environments in promotion order; admins get Edit and Delete on each. */
export function EnvironmentTable({ items, admin, onEdit, onDelete }: { items: Environment[]; admin: boolean; onEdit: (e: Environment) => void; onDelete: (e: Environment) => void }) {
  return (
    <TableScroll>
      <DataTable
        testId="environments-table"
        rows={items}
        rowKey={(e) => e.name}
        rowProps={(e) => ({ 'data-testid': `environment-${e.name}` })}
        columns={[
          { header: 'Order', cell: (e) => e.order },
          { header: 'Name', cellClassName: 'strong', cell: (e) => e.name },
          { header: 'Kind', cell: (e) => <Badge tone={e.kind === 'prod' ? 'danger' : 'neutral'}>{e.kind}</Badge> },
          {
            header: 'Targets (runtime/cluster/namespace)',
            cell: (e) => (
              <span className="chips">
                {e.targets.map((t, i) => (
                  <code key={i} className="chip">
                    {targetText(t)}
                  </code>
                ))}
              </span>
            ),
          },
          admin &&
            actionsColumn((e: Environment) => (
              <>
                <button type="button" className="button button-small" onClick={() => onEdit(e)} aria-label={`Edit environment ${e.name}`} data-testid={`environment-edit-${e.name}`}>
                  Edit
                </button>{' '}
                <span data-testid={`environment-delete-${e.name}`}>
                  <RowDangerButton label="Delete" ariaLabel={`Delete environment ${e.name}`} onClick={() => onDelete(e)} />
                </span>
              </>
            )),
        ]}
      />
    </TableScroll>
  );
}

/**
 * The fields of the environment form: name (read-only when editing), kind, order and the
 * targets as rows of globs. local: the form's own errors; server: the last 400, shown at the
 * field it names (targets[1].namespace at that glob), else below the form.
 */
export function EnvironmentFields({
  draft,
  onChange,
  editing,
  local,
  server,
}: {
  draft: EnvironmentDraft;
  onChange: (d: EnvironmentDraft) => void;
  editing: boolean;
  local: FormErrors;
  server: unknown;
}) {
  const set = (patch: Partial<EnvironmentDraft>) => onChange({ ...draft, ...patch });
  const setTarget = (i: number, key: (typeof TARGET_KEYS)[number], v: string) => set({ targets: draft.targets.map((t, j) => (j === i ? { ...t, [key]: v } : t)) });
  const at = targetOfField(draft, (server as { field?: string } | undefined)?.field);
  const message = (server as { message?: string } | undefined)?.message;
  const targetsError = local.targets ?? fieldError(server, 'targets');
  return (
    <>
      <Field label="Name" error={local.name ?? fieldError(server, 'name')} hint={editing ? 'The name cannot change: delete the environment and add it again.' : "1–63 lower-case letters, digits and '-'."}>
        <input type="text" name="name" value={draft.name} readOnly={editing} onChange={(e) => set({ name: e.target.value })} autoComplete="off" spellCheck={false} data-testid="environment-name" />
      </Field>
      <Field label="Kind" error={local.kind ?? fieldError(server, 'kind')}>
        <select name="kind" value={draft.kind} onChange={(e) => set({ kind: e.target.value })} data-testid="environment-kind">
          <Options values={ENVIRONMENT_KINDS} />
        </select>
      </Field>
      <Field label="Order" error={local.order ?? fieldError(server, 'order')} hint={`0–${MAX_ORDER}: lower orders promote into higher (qa 1 → staging 2 → production 3).`}>
        <input type="number" name="order" min={0} max={MAX_ORDER} step={1} value={draft.order} onChange={(e) => set({ order: e.target.value })} data-testid="environment-order" />
      </Field>
      <fieldset className="kv" data-testid="environment-targets">
        <legend>Targets</legend>
        <p className="field-hint kv-hint">
          Globs (<code>*</code>, <code>?</code>, <code>[a-z]</code>) of the runtime, the destination cluster (name, else server URL) and the destination namespace; empty matches any. An application is
          in the first environment, in order, one of whose targets matches it.
        </p>
        <div className="kv-rows" role="list">
          {draft.targets.map((t, i) => {
            const err = at?.row === i ? message : undefined;
            return (
              <div className={err ? 'target-row kv-row-invalid' : 'target-row'} role="listitem" key={i} data-testid={`environment-target-${i}`}>
                {TARGET_KEYS.map((k) => (
                  <input
                    key={k}
                    type="text"
                    aria-label={`Target ${i + 1}: ${k}`}
                    placeholder={k}
                    value={t[k]}
                    onChange={(e) => setTarget(i, k, e.target.value)}
                    autoComplete="off"
                    spellCheck={false}
                    aria-invalid={err && (!at?.key || at.key === k) ? true : undefined}
                    data-testid={`environment-target-${i}-${k}`}
                  />
                ))}
                <button
                  type="button"
                  className="icon-button"
                  aria-label={`Remove target ${i + 1}`}
                  title="Remove"
                  onClick={() => set({ targets: draft.targets.length === 1 ? [emptyTarget()] : draft.targets.filter((_, j) => j !== i) })}
                  data-testid={`environment-target-${i}-remove`}
                >
                  ×
                </button>
                {err && (
                  <div className="field-error kv-error" role="alert" data-testid={`environment-target-${i}-error`}>
                    {err}
                  </div>
                )}
              </div>
            );
          })}
        </div>
        <button type="button" className="button button-small" onClick={() => set({ targets: [...draft.targets, emptyTarget()] })} disabled={draft.targets.length >= MAX_TARGETS} data-testid="environment-target-add">
          Add target
        </button>
        {targetsError && (
          <div className="field-error" role="alert" data-testid="environment-targets-error">
            {targetsError}
          </div>
        )}
      </fieldset>
      {server !== undefined && !environmentErrorPlaced(draft, server) && (
        <div data-testid="environment-form-error">
          <ErrorNote error={server} />
        </div>
      )}
    </>
  );
}

/** Add (no environment) or edit an environment; closes only when the server has taken it. */
function EnvironmentDialog({ environment, existing, onClose, onSaved }: { environment?: Environment; existing: Environment[]; onClose: () => void; onSaved: (e: Environment) => void }) {
  const editing = !!environment;
  const [draft, setDraft] = useState<EnvironmentDraft>(() => (environment ? environmentDraft(environment) : newEnvironmentDraft(existing)));
  const [local, setLocal] = useState<FormErrors>({});
  const [server, setServer] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (ev: FormEvent) => {
    ev.preventDefault();
    const { body, errors } = environmentRequest(draft);
    setLocal(errors);
    setServer(undefined);
    if (!body) return;
    setBusy(true);
    try {
      const saved = editing ? await environmentsApi.update(body) : await environmentsApi.create(body);
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
      title={editing ? `Edit environment ${environment.name}` : 'Add environment'}
      wide
      onClose={onClose}
      busy={busy}
      formId="environment-form"
      submitLabel={editing ? 'Save environment' : 'Add environment'}
      busyLabel="Saving…"
      onSubmit={submit}
    >
      <div data-testid="environment-form">
        <EnvironmentFields draft={draft} onChange={setDraft} editing={editing} local={local} server={server} />
      </div>
    </FormDialog>
  );
}

/** The account's environments, with the add, edit and delete forms for admins. */
function EnvironmentsSection({ admin, adding, onAdded, onChanged }: { admin: boolean; adding: boolean; onAdded: () => void; onChanged: () => void }) {
  const list = useResource((signal) => environmentsApi.list(signal), []);
  const [editing, setEditing] = useState<Environment>();
  const [deleting, setDeleting] = useState<Environment>();
  const [done, setDone] = useState<string>();
  const items = list.data?.items ?? [];
  const changed = (text: string) => {
    setDone(text);
    list.reload();
    onChanged();
  };
  return (
    <section data-testid="environments-section" data-ready={list.data ? 'true' : undefined} style={{ marginBottom: '1.5rem' }}>
      <h2>Promotion order</h2>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {list.error !== undefined ? (
        <ErrorState error={list.error} onRetry={() => list.reload()} />
      ) : !list.data ? (
        <LoadingRows label="Loading environments" rows={2} />
      ) : items.length === 0 ? (
        <EmptyState title="No environments">
          {admin ? 'Add one: a kind, a place in the promotion order and the runtimes, clusters and namespaces it covers.' : 'An admin adds them here or with freshet environment create.'}
        </EmptyState>
      ) : (
        <EnvironmentTable items={items} admin={admin} onEdit={setEditing} onDelete={setDeleting} />
      )}
      {adding && <EnvironmentDialog existing={items} onClose={onAdded} onSaved={(e) => changed(`Added environment ${e.name}.`)} />}
      {editing && <EnvironmentDialog key={editing.name} environment={editing} existing={items} onClose={() => setEditing(undefined)} onSaved={(e) => changed(`Saved environment ${e.name}.`)} />}
      <ConfirmDialog
        open={!!deleting}
        title="Delete environment"
        confirmLabel="Delete environment"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await environmentsApi.remove(deleting.name);
          changed(`Deleted environment ${deleting.name}.`);
        }}
      >
        <p>
          Delete the environment <strong>{deleting?.name}</strong>? Its applications move to the next environment whose targets match them, or to none. Applications and deployments are not
          touched.
        </p>
      </ConfirmDialog>
    </section>
  );
}

function ProductSection({ name }: { name: string }) {
  const view = useResource((signal) => products.get(name, signal), [name]);
  if (view.error) return <ErrorState error={view.error} onRetry={() => view.reload()} />;
  if (!view.data) return <LoadingRows label={`Loading ${name}`} rows={3} />;
  return <ProductGrid view={view.data} />;
}

export default function Environments() {
  const me = useMe();
  const admin = me.role === 'admin';
  const [adding, setAdding] = useState(false);
  const list = useResource((signal) => products.list(signal), []);
  const chosen = useSearchParams().get('product') ?? undefined;
  const items = list.data?.items ?? [];
  const current = chosen ?? items[0]?.name;
  // A changed environment changes where applications are: the product view reads again.
  const [version, setVersion] = useState(0);
  return (
    <div data-page="environments">
      <PageHeader
        title="Environments"
        actions={
          admin && (
            <button type="button" className="button button-primary" onClick={() => setAdding(true)} data-testid="environment-add">
              Add environment
            </button>
          )
        }
      />
      <p className="muted inline-links">
        What each product runs in each environment, and what promoting it would change. Applications join a product by the <code>codefresh.io/product</code> annotation
        or a product's name patterns (<Link to="/products">Products</Link>); an application is in the first environment, in order, one of whose targets matches it.
      </p>
      <EnvironmentsSection admin={admin} adding={adding} onAdded={() => setAdding(false)} onChanged={() => setVersion((v) => v + 1)} />
      <h2>By product</h2>
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
          {current && <ProductSection key={`${current}/${version}`} name={current} />}
        </>
      )}
    </div>
  );
}
