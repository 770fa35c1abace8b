import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { contexts } from '../api/ci';
import type { ConfigContext, ContextType, RegistryContext } from '../api/types';
import { href, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog } from '../components/Dialog';
import { FormDialog } from '../components/FormDialog';
import { Field } from '../components/Field';
import { KeyValueRows } from '../components/KeyValueRows';
import { PageHeader } from '../components/PageHeader';
import { SettingsNav } from '../components/SettingsNav';
import { DataTable, ResourceTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { ErrorNote, Flash, LoadingRows } from '../components/States';
import { formatTime } from '../lib/format';
import { isBlank, mapFromRows, validateRows, type KVRow } from '../lib/kv';
import { resourceNameError } from '../lib/pipelineRefs';
import { registryUrlError } from '../lib/registry';
import { useResource } from '../lib/useResource';
import { RowDangerButton } from '../components/RowDangerButton';

export default function Contexts() {
  const me = useMe();
  const canManage = me.role !== 'viewer';
  const { search } = useLocation();
  const open = new URLSearchParams(search).get('context') ?? '';
  const list = useResource((signal) => contexts.list(signal), []);
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState<ConfigContext>();
  const [done, setDone] = useState<string>();
  const show = (name?: string) => navigate(href('/settings/contexts', { context: name }), { replace: !name });

  return (
    <div data-page="contexts">
      <PageHeader
        title="Settings"
        actions={
          canManage && (
            <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
              New context
            </button>
          )
        }
      />
      <SettingsNav />
      <p className="muted">
        Contexts hold shared configuration and secrets; pipelines that use a context get its values as variables. Registry contexts hold a container registry&apos;s address and credentials, for the
        builds of pipelines that use them (and every build, for the account&apos;s default registry). Secret values and registry passwords are encrypted at rest and always shown masked; admins may
        reveal them, and each reveal is recorded in the audit log.
      </p>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <ResourceTable
        list={list}
        placeholder={{ label: 'Loading contexts', rows: 4 }}
        empty={{
          title: 'No contexts yet',
          body: <>For example a <code>deploy</code> secret with <code>REGISTRY_PASSWORD</code>, or a <code>defaults</code> config with <code>GO_VERSION</code>.</>,
          action: canManage && <button type="button" className="button" onClick={() => setCreating(true)}>Create a context</button>,
        }}
        rowKey={(c) => c.id}
        rowProps={(c) => ({ 'data-testid': `context-${c.name}` })}
        columns={[
          {
            header: 'Name',
            cellClassName: 'strong',
            cell: (c) => (
              <button type="button" className="link-button" onClick={() => show(c.name)}>
                {c.name}
              </button>
            ),
          },
          { header: 'Type', cell: (c) => <Badge tone={typeTone(c.type)}>{c.type}</Badge> },
          {
            header: 'Keys or registry',
            cellClassName: 'ellipsis-cell',
            cell: (c) =>
              c.registry ? (
                <span data-testid={`registry-${c.name}`}>
                  <code>{c.registry.url}</code>
                  {c.registry.username && <span className="muted"> as {c.registry.username}</span>} {c.registry.default && <Badge tone="success">default</Badge>}
                </span>
              ) : (
                <span className="chips">
                  {Object.keys(c.values)
                    .sort()
                    .map((k) => (
                      <code key={k} className="chip">
                        {k}
                      </code>
                    ))}
                </span>
              ),
          },
          timeColumn('Updated', (c: ConfigContext) => c.updatedAt),
          actionsColumn((c: ConfigContext) => (
            <>
              <button type="button" className="button button-small" onClick={() => show(c.name)} aria-label={`Show values of ${c.name}`}>
                Values
              </button>{' '}
              {canManage && c.registry && !c.registry.default && (
                <>
                  <button
                    type="button"
                    className="button button-small"
                    aria-label={`Make ${c.name} the default registry`}
                    onClick={async () => {
                      try {
                        // The masked password sent back keeps the stored one: the URL and CA are unchanged.
                        await contexts.updateRegistry(c.name, { ...c.registry!, default: true });
                        setDone(`${c.name} is now the default registry.`);
                      } catch (e) {
                        setDone(`Could not make ${c.name} the default registry: ${e instanceof Error ? e.message : String(e)}`);
                      }
                      list.reload();
                    }}
                  >
                    Make default
                  </button>{' '}
                </>
              )}
              {canManage && <RowDangerButton label="Delete" ariaLabel={`Delete context ${c.name}`} onClick={() => setDeleting(c)} />}
            </>
          )),
        ]}
      />
      {open && <ValuesDialog key={open} name={open} admin={me.role === 'admin'} onClose={() => show(undefined)} />}
      {creating && (
        <CreateDialog
          onClose={() => setCreating(false)}
          onCreated={(c) => {
            setDone(`Created ${c.type} context ${c.name}.`);
            list.reload();
          }}
        />
      )}
      <ConfirmDialog
        open={!!deleting}
        title="Delete context"
        confirmLabel="Delete context"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await contexts.remove(deleting.name);
          setDone(`Deleted context ${deleting.name}.`);
          list.reload();
        }}
      >
        <p>
          Delete the {deleting?.type} context <strong>{deleting?.name}</strong>? Pipelines that use it lose its values from their next build.
        </p>
      </ConfirmDialog>
    </div>
  );
}

function typeTone(type: ContextType | string) {
  return type === 'secret' ? 'warning' : type === 'registry' ? 'info' : 'neutral';
}

/** A registry context's fields as the values dialog lists them. */
function registryValues(r: RegistryContext): Record<string, string> {
  const certs = (r.ca?.match(/-----BEGIN CERTIFICATE-----/g) ?? []).length;
  return {
    url: r.url,
    username: r.username || '—',
    password: r.password || '— (none)',
    ca: certs === 0 ? '—' : certs === 1 ? '1 certificate' : `${certs} certificates`,
    default: r.default ? 'yes: builds push here unless told otherwise' : 'no',
  };
}

function ValuesDialog({ name, admin, onClose }: { name: string; admin: boolean; onClose: () => void }) {
  const [decrypt, setDecrypt] = useState(false);
  const res = useResource((signal) => contexts.get(name, decrypt, signal), [name, decrypt]);
  const c = res.data;
  const secret = c?.type === 'secret' || !!c?.registry?.password;
  const values = c ? (c.registry ? registryValues(c.registry) : c.values) : {};
  const keys = c?.registry ? Object.keys(values) : Object.keys(values).sort();
  return (
    <Dialog
      open
      title={`Context ${name}`}
      wide
      onClose={onClose}
      footer={
        <>
          {secret && admin && (
            <button type="button" className="button" onClick={() => setDecrypt(!decrypt)} disabled={res.loading} data-testid="reveal-secrets">
              {decrypt ? 'Hide values' : 'Reveal values'}
            </button>
          )}
          <button type="button" className="button button-primary" onClick={onClose}>
            Close
          </button>
        </>
      }
    >
      {res.error !== undefined ? (
        <ErrorNote error={res.error} />
      ) : !c ? (
        <LoadingRows rows={3} label="Loading values" />
      ) : (
        <>
          <p className="muted small">
            <Badge tone={typeTone(c.type)}>{c.type}</Badge> · created {formatTime(c.createdAt)} · updated {formatTime(c.updatedAt)}
          </p>
          {secret && (
            <p className="muted small">
              {decrypt ? 'Shown in plain text; this reveal was recorded in the audit log.' : admin ? 'Values are masked. Revealing them is recorded in the audit log.' : 'Values are masked; only admins may reveal them.'}
            </p>
          )}
          <DataTable
            className="table table-compact"
            busy={res.loading}
            rows={keys}
            rowKey={(k) => k}
            columns={[
              { header: 'Key', cell: (k) => <code>{k}</code> },
              { header: 'Value', cellClassName: 'break-all', cell: (k) => <code data-testid={`value-${k}`}>{values[k]}</code> },
            ]}
          />
        </>
      )}
    </Dialog>
  );
}

function CreateDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (c: ConfigContext) => void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState<ContextType>('secret');
  const [rows, setRows] = useState<KVRow[]>([{ key: '', value: '' }]);
  const [registry, setRegistry] = useState<RegistryContext>({ url: '', username: '', password: '', ca: '', default: false });
  const [local, setLocal] = useState<{ name?: string; values?: string; url?: string; password?: string }>({});
  const [rowErrors, setRowErrors] = useState<(string | undefined)[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const isRegistry = type === 'registry';
  const edit = (patch: Partial<RegistryContext>) => setRegistry((r) => ({ ...r, ...patch }));
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = isRegistry
      ? {
          name: resourceNameError(name, 'Name'),
          url: registryUrlError(registry.url),
          password: registry.username && !registry.password ? 'Give the password or token for this user.' : undefined,
        }
      : { name: resourceNameError(name, 'Name'), values: rows.every(isBlank) ? 'Give at least one KEY=VALUE.' : undefined };
    const re = isRegistry ? [] : validateRows(rows, 'variable');
    setLocal(errs);
    setRowErrors(re);
    setError(undefined);
    if (Object.values(errs).some(Boolean) || re.some(Boolean)) return;
    setBusy(true);
    try {
      const c = isRegistry
        ? await contexts.createRegistry(name, {
            url: registry.url.trim(),
            username: registry.username || undefined,
            password: registry.password || undefined,
            ca: registry.ca?.trim() ? registry.ca : undefined,
            default: registry.default || undefined,
          })
        : await contexts.create(name, type, mapFromRows(rows));
      onClose();
      onCreated(c);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const shownElsewhere = ['name', 'registry.url', 'registry.username', 'registry.password', 'registry.ca'].some((f) => fieldError(error, f));
  return (
    <FormDialog
      title="New context"
      wide
      onClose={onClose}
      busy={busy}
      formId="create-context"
      submitLabel="Create context"
      busyLabel="Creating…"
      onSubmit={submit}
    >
      <div className="form-row">
        <Field label="Name" error={local.name ?? fieldError(error, 'name')}>
          <input type="text" name="name" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <fieldset className="radio-row radio-field">
          <legend>Type</legend>
          <label className="radio">
            <input type="radio" name="type" value="secret" checked={type === 'secret'} onChange={() => setType('secret')} /> Secret <span className="muted small">encrypted, masked</span>
          </label>
          <label className="radio">
            <input type="radio" name="type" value="config" checked={type === 'config'} onChange={() => setType('config')} /> Config <span className="muted small">plain</span>
          </label>
          <label className="radio">
            <input type="radio" name="type" value="registry" checked={isRegistry} onChange={() => setType('registry')} /> Registry <span className="muted small">container images</span>
          </label>
        </fieldset>
      </div>
      {isRegistry ? (
        <>
          <Field label="Registry URL" error={local.url ?? fieldError(error, 'registry.url')} hint={<>host[:port] and an optional path, no scheme: <code>ghcr.io/acme</code>, <code>127.0.0.1:5000</code></>}>
            <input type="text" name="url" value={registry.url} onChange={(e) => edit({ url: e.target.value })} autoComplete="off" spellCheck={false} placeholder="ghcr.io/acme" />
          </Field>
          <div className="form-row">
            <Field label="Username" error={fieldError(error, 'registry.username')} hint="Empty for anonymous access, or a token alone.">
              <input type="text" name="username" value={registry.username} onChange={(e) => edit({ username: e.target.value })} autoComplete="off" spellCheck={false} />
            </Field>
            <Field label="Password or token" error={local.password ?? fieldError(error, 'registry.password')} hint="Encrypted at rest, masked in logs.">
              <input type="password" name="password" value={registry.password} onChange={(e) => edit({ password: e.target.value })} autoComplete="new-password" />
            </Field>
          </div>
          <Field label="CA certificates (optional)" error={fieldError(error, 'registry.ca')} hint="PEM, for a registry with a private certificate authority.">
            <textarea name="ca" rows={4} value={registry.ca} onChange={(e) => edit({ ca: e.target.value })} spellCheck={false} placeholder="-----BEGIN CERTIFICATE-----" />
          </Field>
          <label className="check">
            <input type="checkbox" name="default" checked={!!registry.default} onChange={(e) => edit({ default: e.target.checked })} /> The account&apos;s default registry{' '}
            <span className="muted small">builds push here unless told otherwise; replaces the current default</span>
          </label>
        </>
      ) : (
        <>
          <KeyValueRows label="Values" rows={rows} onChange={setRows} errors={rowErrors} secret={type === 'secret'} hint="Paste KEY=VALUE lines (a .env file) to fill several rows." />
          {local.values && <div className="field-error">{local.values}</div>}
        </>
      )}
      {error !== undefined && !shownElsewhere && <ErrorNote error={error} />}
    </FormDialog>
  );
}
