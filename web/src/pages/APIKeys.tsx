import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { apiKeys } from '../api/rest';
import { roles, type APIKey, type CreatedAPIKey, type Role } from '../api/types';
import { useMe } from '../app/session';
import { StatusBadge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { Dialog } from '../components/Dialog';
import { FormDialog } from '../components/FormDialog';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { ListPager } from '../components/Pager';
import { ResourceTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { ErrorNote, Flash } from '../components/States';
import { formatTime, relativeTime } from '../lib/format';
import { usePagedList } from '../lib/usePagedList';
import * as v from '../lib/validate';
import { RowDangerButton } from '../components/RowDangerButton';

/** Roles a caller may give a key: their own and below. */
export function grantableRoles(mine: Role): Role[] {
  return roles.slice(roles.indexOf(mine));
}

/** How a key is recognised in lists: its public start, as tokens are written (fsk_<prefix>_…). */
export function keyHint(prefix: string): string {
  return prefix.startsWith('fsk_') ? `${prefix}…` : `fsk_${prefix}_…`;
}

export const lifetimes = [
  { value: '720h', label: '30 days' },
  { value: '', label: '90 days (default)' },
  { value: '8760h', label: '1 year' },
  { value: '0', label: 'Never expires' },
  { value: 'custom', label: 'Custom…' },
] as const;

export default function APIKeys() {
  const me = useMe();
  const admin = me.role === 'admin';
  const list = usePagedList((o, signal) => apiKeys.list(o, signal));
  const [creating, setCreating] = useState(false);
  const [revoking, setRevoking] = useState<APIKey>();
  const [done, setDone] = useState<string>();

  return (
    <div data-page="api-keys">
      <PageHeader
        title="API keys"
        actions={
          <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
            Create API key
          </button>
        }
      >
        Keys let scripts and the CLI call the API as you, with at most your role. {admin ? 'As an admin you see every key of the account.' : 'You see your own keys.'}
      </PageHeader>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <ResourceTable
        list={list}
        pager={<ListPager list={list} noun="API keys" one="API key" />}
        placeholder={{ label: 'Loading API keys', rows: 6 }}
        empty={
          list.page.after
            ? { title: 'No keys on this page' }
            : {
                title: 'No API keys yet',
                body: (
                  <>
                    Use one with <code>freshet login --token</code> or as <code>Authorization: Bearer fsk_…</code>.
                  </>
                ),
                action: (
                  <button type="button" className="button" onClick={() => setCreating(true)}>
                    Create your first key
                  </button>
                ),
              }
        }
        rowKey={(k) => k.id}
        rowProps={(k) => ({ 'data-testid': `apikey-${k.name}` })}
        columns={[
          { header: 'Name', cellClassName: 'strong', cell: (k) => k.name },
          { header: 'Key', cell: (k) => <code>{keyHint(k.prefix)}</code> },
          { header: 'Role', cell: (k) => <StatusBadge value={k.role} /> },
          admin && { header: 'Owner', cellClassName: 'muted', cell: (k) => (k.userId === me.user.id ? 'you' : <code className="small">{k.userId}</code>) },
          { header: 'Status', cell: (k) => <StatusBadge value={k.status} /> },
          timeColumn('Created', (k: APIKey) => k.createdAt),
          { header: 'Expires', cell: (k) => (k.revokedAt ? '—' : k.expiresAt ? relativeTime(k.expiresAt) : 'never'), cellProps: (k) => ({ title: formatTime(k.expiresAt) }) },
          timeColumn('Last used', (k: APIKey) => k.lastUsedAt, 'never'),
          actionsColumn((k: APIKey) => k.status === 'active' && <RowDangerButton label="Revoke" ariaLabel={`Revoke ${k.name}`} onClick={() => setRevoking(k)} />),
        ]}
      />
      <CreateKeyDialog open={creating} myRole={me.role} onClose={() => setCreating(false)} onCreated={() => list.reload()} />
      <ConfirmDialog
        open={!!revoking}
        title="Revoke API key"
        confirmLabel="Revoke key"
        danger
        onClose={() => setRevoking(undefined)}
        onConfirm={async () => {
          if (!revoking) return;
          await apiKeys.revoke(revoking.id);
          setDone(`Revoked ${revoking.name}.`);
          list.reload();
        }}
      >
        <p>
          Revoke <strong>{revoking?.name}</strong> (<code>{revoking && keyHint(revoking.prefix)}</code>)? Every request made with it fails from now on. This cannot be undone.
        </p>
      </ConfirmDialog>
    </div>
  );
}

function CreateKeyDialog({ open, myRole, onClose, onCreated }: { open: boolean; myRole: Role; onClose: () => void; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [role, setRole] = useState<Role>(myRole);
  const [lifetime, setLifetime] = useState<string>('');
  const [custom, setCustom] = useState('');
  const [errors, setErrors] = useState<v.Errors<'name' | 'expiresIn'>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedAPIKey>();

  const close = () => {
    setName('');
    setRole(myRole);
    setLifetime('');
    setCustom('');
    setErrors({});
    setError(undefined);
    setCreated(undefined);
    onClose();
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const expiresIn = lifetime === 'custom' ? custom.trim() : lifetime;
    const errs = { name: v.name(name, 'Name'), expiresIn: lifetime === 'custom' ? v.expiresIn(custom) : undefined };
    setErrors(errs);
    setError(undefined);
    if (v.hasErrors(errs)) return;
    setBusy(true);
    try {
      const k = await apiKeys.create({ name, role, expiresIn: expiresIn || undefined });
      setCreated(k);
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (created) {
    return (
      <Dialog
        open={open}
        title="API key created"
        wide
        onClose={close}
        footer={
          <button type="button" className="button button-primary" onClick={close}>
            Done
          </button>
        }
      >
        <p>
          This is the only time the key <strong>{created.name}</strong> is shown. Copy it now and keep it somewhere safe: Freshet stores only a hash.
        </p>
        <div className="secret-box">
          <code data-testid="new-token">{created.token}</code>
          <CopyButton text={created.token} />
        </div>
        <p className="muted small">
          Role {created.role}, {created.expiresAt ? `expires ${formatTime(created.expiresAt)}` : 'never expires'}.
        </p>
      </Dialog>
    );
  }

  return (
    <FormDialog
      open={open}
      title="Create API key"
      onClose={close}
      busy={busy}
      formId="create-key"
      submitLabel="Create key"
      busyLabel="Creating…"
      onSubmit={submit}
    >
      <Field label="Name" hint="What uses it, e.g. ci-deploy." error={errors.name ?? fieldError(error, 'name')}>
        <input type="text" name="name" value={name} onChange={(e) => (setName(e.target.value), setErrors({ ...errors, name: undefined }))} autoComplete="off" />
      </Field>
      <Field label="Role" hint="At most your own role." error={fieldError(error, 'role')}>
        <select name="role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          {grantableRoles(myRole).map((r) => (
            <option key={r} value={r}>
              {r}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Expires" error={lifetime !== 'custom' ? fieldError(error, 'expiresIn') : undefined}>
        <select name="lifetime" value={lifetime} onChange={(e) => setLifetime(e.target.value)}>
          {lifetimes.map((l) => (
            <option key={l.value} value={l.value}>
              {l.label}
            </option>
          ))}
        </select>
      </Field>
      {lifetime === 'custom' && (
        <Field label="Lifetime" hint="A duration such as 48h or 2160h." error={errors.expiresIn ?? fieldError(error, 'expiresIn')}>
          <input type="text" name="expiresIn" value={custom} onChange={(e) => (setCustom(e.target.value), setErrors({ ...errors, expiresIn: undefined }))} autoComplete="off" />
        </Field>
      )}
      {error !== undefined && !['name', 'role', 'expiresIn'].some((f) => fieldError(error, f)) && <ErrorNote error={error} />}
    </FormDialog>
  );
}
