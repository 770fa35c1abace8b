import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { users } from '../api/rest';
import { roles, type CreatedUser, type Role, type User } from '../api/types';
import { useMe } from '../app/session';
import { StatusBadge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { Dialog } from '../components/Dialog';
import { FormDialog } from '../components/FormDialog';
import { Field, Options } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { ListPager } from '../components/Pager';
import { ResourceTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { ErrorNote, Flash } from '../components/States';
import { usePagedList } from '../lib/usePagedList';
import * as v from '../lib/validate';
import { RowDangerButton } from '../components/RowDangerButton';

export default function Users() {
  const me = useMe();
  const admin = me.role === 'admin';
  const list = usePagedList((o, signal) => users.list(o, signal));
  const [creating, setCreating] = useState(false);
  const [editing, setEditing] = useState<User>();
  const [removing, setRemoving] = useState<User>();
  const [done, setDone] = useState<string>();

  return (
    <div data-page="users">
      <PageHeader
        title="Users"
        actions={
          admin && (
            <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
              Add user
            </button>
          )
        }
      >
        Members of {me.account.name} and their roles. Admins manage users and read the audit log; members work with
        pipelines and applications; viewers only look.
      </PageHeader>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <ResourceTable
        list={list}
        pager={<ListPager list={list} noun="users" one="user" />}
        placeholder={{ label: 'Loading users', rows: 8 }}
        empty={{
          title: 'No users on this page',
          body: (
            <>
              The list may have changed since this link was made.{' '}
              {list.page.after && (
                <button type="button" className="link-button" onClick={() => list.go({ after: '', limit: list.page.limit, trail: [] })}>
                  Go to the first page
                </button>
              )}
            </>
          ),
        }}
        rowKey={(u) => u.id}
        rowProps={(u) => ({ 'data-testid': `user-${u.email}` })}
        columns={[
          {
            header: 'User',
            cell: (u) => (
              <>
                <div className="strong">
                  {u.name || u.email}
                  {u.id === me.user.id && <span className="muted"> (you)</span>}
                </div>
                <div className="muted small">{u.email}</div>
              </>
            ),
          },
          { header: 'Role', cell: (u) => <StatusBadge value={u.role} /> },
          timeColumn('Added', (u: User) => u.createdAt),
          admin &&
            actionsColumn((u: User) => (
              <>
                <button type="button" className="button button-small" onClick={() => setEditing(u)} aria-label={`Change role of ${u.email}`}>
                  Change role
                </button>{' '}
                <RowDangerButton label="Remove" ariaLabel={`Remove ${u.email}`} onClick={() => setRemoving(u)} />
              </>
            )),
        ]}
      />

      <CreateUserDialog
        open={creating}
        onClose={() => setCreating(false)}
        onCreated={(u) => {
          setDone(`Added ${u.email} as ${u.role}.`);
          list.reload();
        }}
      />
      {editing && (
        <RoleDialog
          user={editing}
          onClose={() => setEditing(undefined)}
          onChanged={(u) => {
            setDone(`${u.email} is now ${u.role === 'admin' ? 'an admin' : `a ${u.role}`}.`);
            list.reload();
          }}
        />
      )}
      <ConfirmDialog
        open={!!removing}
        title="Remove user"
        confirmLabel="Remove user"
        danger
        onClose={() => setRemoving(undefined)}
        onConfirm={async () => {
          if (!removing) return;
          await users.remove(removing.id);
          setDone(`Removed ${removing.email}.`);
          list.reload();
        }}
      >
        <p>
          Remove <strong>{removing?.email}</strong> from {me.account.name}? Their API keys and sessions in this account stop working at once.
          {removing?.id === me.user.id && <strong> This is you: you will lose access to this account.</strong>}
        </p>
      </ConfirmDialog>
    </div>
  );
}

type UserField = 'email' | 'name' | 'role' | 'password';

function CreateUserDialog({ open, onClose, onCreated }: { open: boolean; onClose: () => void; onCreated: (u: CreatedUser) => void }) {
  const [form, setForm] = useState({ email: '', name: '', role: 'member' as Role, password: '' });
  const [errors, setErrors] = useState<v.Errors<UserField>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedUser>();

  const close = () => {
    setForm({ email: '', name: '', role: 'member', password: '' });
    setErrors({});
    setError(undefined);
    setCreated(undefined);
    onClose();
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs: v.Errors<UserField> = { email: v.email(form.email), name: v.displayName(form.name), password: v.password(form.password, true) };
    setErrors(errs);
    setError(undefined);
    if (v.hasErrors(errs)) return;
    setBusy(true);
    try {
      const u = await users.create({ email: form.email.trim(), role: form.role, name: form.name.trim() || undefined, password: form.password || undefined });
      onCreated(u);
      if (u.password) setCreated(u);
      else close();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (created?.password) {
    return (
      <Dialog
        open={open}
        title="User added"
        onClose={close}
        footer={
          <button type="button" className="button button-primary" onClick={close}>
            Done
          </button>
        }
      >
        <p>
          <strong>{created.email}</strong> can log in with this generated password. It is shown only now: pass it on safely.
        </p>
        <div className="secret-box">
          <code data-testid="generated-password">{created.password}</code>
          <CopyButton text={created.password} />
        </div>
      </Dialog>
    );
  }
  const set = (k: keyof typeof form) => (e: { target: { value: string } }) => {
    setForm({ ...form, [k]: e.target.value });
    setErrors({ ...errors, [k]: undefined });
  };
  return (
    <FormDialog
      open={open}
      title="Add user"
      onClose={close}
      busy={busy}
      formId="create-user"
      submitLabel="Add user"
      busyLabel="Adding…"
      onSubmit={submit}
    >
      <Field label="Email" error={errors.email ?? fieldError(error, 'email')}>
        <input type="email" name="email" value={form.email} onChange={set('email')} autoComplete="off" />
      </Field>
      <Field label="Name" hint="Optional; the part of the email before @ otherwise." error={errors.name ?? fieldError(error, 'name')}>
        <input type="text" name="name" value={form.name} onChange={set('name')} autoComplete="off" />
      </Field>
      <Field label="Role" error={fieldError(error, 'role')}>
        <select name="role" value={form.role} onChange={set('role')}>
          <Options values={roles} />
        </select>
      </Field>
      <Field
        label="Password"
        hint="Optional. Leave empty and Freshet generates one, shown once. Someone who already has a Freshet login keeps theirs."
        error={errors.password ?? fieldError(error, 'password')}
      >
        <input type="password" name="password" value={form.password} onChange={set('password')} autoComplete="new-password" />
      </Field>
      {error !== undefined && !['email', 'name', 'role', 'password'].some((f) => fieldError(error, f)) && <ErrorNote error={error} />}
    </FormDialog>
  );
}

function RoleDialog({ user, onClose, onChanged }: { user: User; onClose: () => void; onChanged: (u: User) => void }) {
  const [role, setRole] = useState<Role>(user.role);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (role === user.role) return onClose();
    setBusy(true);
    setError(undefined);
    try {
      onChanged(await users.setRole(user.id, role));
      onClose();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog
      title="Change role"
      onClose={onClose}
      busy={busy}
      formId="change-role"
      submitLabel={`Make ${role}`}
      busyLabel="Saving…"
      onSubmit={submit}
      submitDisabled={role === user.role}
      validate
    >
      <p>
        <strong>{user.email}</strong> is {user.role === 'admin' ? 'an admin' : `a ${user.role}`}. The change applies to their sessions and API keys at once.
      </p>
      <Field label="New role" error={fieldError(error, 'role')}>
        <select name="role" value={role} onChange={(e) => setRole(e.target.value as Role)}>
          <Options values={roles} />
        </select>
      </Field>
      {error !== undefined && !fieldError(error, 'role') && <ErrorNote error={error} />}
    </FormDialog>
  );
}
