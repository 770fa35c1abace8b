import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { accounts, invitations } from '../api/rest';
import type { Account, Invitation } from '../api/types';
import { useMe, useSession } from '../app/session';
import { setTheme, useTheme } from '../app/theme';
import { StatusBadge } from '../components/Badge';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { ResourceTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { RowDangerButton } from '../components/RowDangerButton';
import { SettingsNav } from '../components/SettingsNav';
import { ErrorNote, Flash } from '../components/States';
import { formatTime } from '../lib/format';
import { useResource } from '../lib/useResource';
import * as v from '../lib/validate';

export default function Settings() {
  const me = useMe();
  const theme = useTheme();
  return (
    <div data-page="settings">
      <PageHeader title="Settings" />
      <SettingsNav />

      <section className="panel" aria-labelledby="s-account">
        <h2 id="s-account">Account</h2>
        <dl className="props">
          <dt>Name</dt>
          <dd>{me.account.name}</dd>
          <dt>ID</dt>
          <dd>
            <code>{me.account.id}</code>
          </dd>
          <dt>Created</dt>
          <dd>{formatTime(me.account.createdAt)}</dd>
          <dt>Your role</dt>
          <dd>
            <StatusBadge value={me.role} />
          </dd>
          <dt>Signed in as</dt>
          <dd>
            {me.user.email} <span className="muted">({me.via === 'session' ? 'browser session' : 'API key'})</span>
          </dd>
        </dl>
      </section>

      <section className="panel" aria-labelledby="s-accounts">
        <h2 id="s-accounts">Your accounts</h2>
        <p className="muted">Each account has its own users, keys and audit log. Switch with the account menu at the top.</p>
        <ul className="plain-list">
          {me.accounts.map((a) => (
            <li key={a.id}>
              <strong>{a.name}</strong> <span className="muted">· {a.role}</span>
              {a.id === me.account.id && <span className="muted"> · current</span>}
            </li>
          ))}
        </ul>
        {me.role === 'admin' && <CreateAccount />}
      </section>

      <Invitations />

      <section className="panel" aria-labelledby="s-appearance">
        <h2 id="s-appearance">Appearance</h2>
        <fieldset className="radio-row">
          <legend className="visually-hidden">Theme</legend>
          {(['light', 'dark'] as const).map((t) => (
            <label key={t} className="radio">
              <input type="radio" name="theme" value={t} checked={theme === t} onChange={() => setTheme(t)} /> {t === 'light' ? 'Light' : 'Dark'}
            </label>
          ))}
        </fieldset>
        <p className="muted small">Kept in this browser.</p>
      </section>

    </div>
  );
}

/**
 * Invitations of the user to other accounts (an admin there added their email). Accepting makes
 * them a member there; only the user's own browser session can answer.
 */
function Invitations() {
  const me = useMe();
  const { refresh } = useSession();
  const list = useResource((signal) => invitations.list(signal), []);
  const [busy, setBusy] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const answer = async (inv: Invitation, accept: boolean) => {
    setBusy(inv.id);
    setError(undefined);
    try {
      if (accept) {
        const m = await invitations.accept(inv.id);
        setDone(`Joined ${m.name} as ${m.role}. Switch to it with the account menu.`);
        refresh(); // the account menu lists the account joined
      } else {
        await invitations.decline(inv.id);
        setDone(`Declined the invitation to ${inv.account.name}.`);
        refresh(); // the account menu stops offering it
      }
      list.reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(undefined);
    }
  };
  return (
    <section className="panel" aria-labelledby="s-invitations" id="invitations">
      <h2 id="s-invitations">Invitations</h2>
      <p className="muted">Admins of other accounts can invite you with your email; you join only if you accept.</p>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {error !== undefined && <ErrorNote error={error} />}
      <ResourceTable
        list={list}
        placeholder={{ label: 'Loading invitations', rows: 1 }}
        empty={{ title: 'No invitations' }}
        className="table table-compact"
        rowKey={(i) => i.id}
        rowProps={(i) => ({ 'data-testid': `invitation-${i.account.name}` })}
        columns={[
          { header: 'Account', cellClassName: 'strong', cell: (i) => i.account.name },
          { header: 'Role', cell: (i) => <StatusBadge value={i.role} /> },
          { header: 'Invited by', cellClassName: 'muted', cell: (i) => i.invitedBy },
          timeColumn('Expires', (i: Invitation) => i.expiresAt),
          actionsColumn((i: Invitation) =>
            me.via === 'session' ? (
              <>
                <button type="button" className="button button-small" disabled={busy === i.id} onClick={() => void answer(i, true)} aria-label={`Accept the invitation to ${i.account.name}`}>
                  Accept
                </button>{' '}
                <RowDangerButton label="Decline" ariaLabel={`Decline the invitation to ${i.account.name}`} onClick={() => void answer(i, false)} />
              </>
            ) : (
              <span className="muted small">Answer from a browser session</span>
            ),
          ),
        ]}
      />
    </section>
  );
}

function CreateAccount() {
  const { switchAccount, refresh } = useSession();
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>();
  const [local, setLocal] = useState<string>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<Account>();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const err = v.name(name, 'Account name');
    setLocal(err);
    setError(undefined);
    if (err) return;
    setBusy(true);
    try {
      setCreated(await accounts.create(name));
      setName('');
      refresh(); // the account menu lists the new account
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="inline-form" onSubmit={submit} noValidate>
      <Field label="New account" hint="You become its admin." error={local ?? fieldError(error, 'name')}>
        <input type="text" name="accountName" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" />
      </Field>
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Creating…' : 'Create account'}
      </button>
      {error !== undefined && !fieldError(error, 'name') && <ErrorNote error={error} />}
      {created && (
        <div className="notice" role="status">
          Created {created.name}.{' '}
          <button type="button" className="link-button" onClick={() => switchAccount(created.id)}>
            Switch to it
          </button>
        </div>
      )}
    </form>
  );
}
