// Settings → Single sign-on: the account's OpenID Connect login (GET/PUT/DELETE /api/v1/sso,
// docs/security.md). Admins only: the client secret is write-only — the API says whether one is
// stored, never what it is, and an empty secret field keeps it.
import { useState, type FormEvent } from 'react';
import { ApiError, fieldError } from '../api/client';
import { sso, type SSOConfig } from '../api/governance';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { SettingsNav } from '../components/SettingsNav';
import { ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import { formatTime } from '../lib/format';
import { ssoErrors, ssoFormFrom, ssoRequest, type SSOForm } from '../lib/governance';
import { useResource } from '../lib/useResource';
import * as v from '../lib/validate';

/** What the masked secret looks like: the same whatever the secret is. */
export const MASK = '••••••••';

export default function SSOSettings() {
  const me = useMe();
  const admin = me.role === 'admin';
  return (
    <div data-page="settings-sso">
      <PageHeader title="Settings" />
      <SettingsNav />
      {admin ? (
        <SSOAdmin />
      ) : (
        <section className="panel" aria-labelledby="sso-h">
          <h2 id="sso-h">Single sign-on</h2>
          <p className="muted">Only admins can see or change this account's single sign-on.</p>
        </section>
      )}
    </div>
  );
}

function SSOAdmin() {
  const cfg = useResource(
    (signal) =>
      sso.get(signal).catch((e: unknown) => {
        if (e instanceof ApiError && e.status === 404) return null; // not set up
        throw e;
      }),
    [],
  );
  const [done, setDone] = useState<string>();
  const [removing, setRemoving] = useState(false);
  if (cfg.error !== undefined) return <ErrorState error={cfg.error} onRetry={() => cfg.reload()} />;
  if (cfg.data === undefined) return <LoadingRows rows={4} label="Loading single sign-on" />;
  const c = cfg.data;
  return (
    <>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <section className="panel" aria-labelledby="sso-h" data-testid="sso-summary">
        <h2 id="sso-h">Single sign-on</h2>
        {c ? (
          <>
            <SSOSummary config={c} />
            <button type="button" className="button button-danger-quiet" onClick={() => setRemoving(true)}>
              Remove single sign-on
            </button>
          </>
        ) : (
          <p className="muted">Not set up: members log in with their password. Give your OpenID Connect provider's details below to let them log in through it.</p>
        )}
      </section>
      <SSOEditor
        key={c?.updatedAt ?? 'new'}
        config={c ?? undefined}
        onSaved={() => {
          setDone('Single sign-on saved.');
          cfg.reload();
        }}
      />
      <ConfirmDialog
        open={removing}
        title="Remove single sign-on"
        confirmLabel="Remove"
        danger
        onClose={() => setRemoving(false)}
        onConfirm={async () => {
          await sso.remove();
          setDone('Single sign-on removed: members log in with their password.');
          cfg.reload();
        }}
      >
        Members stop logging in through {c?.issuer}; those without a password must get a password reset from an admin.
      </ConfirmDialog>
    </>
  );
}

/** The stored configuration, the secret masked. */
export function SSOSummary({ config: c }: { config: SSOConfig }) {
  return (
    <dl className="props">
      <dt>Issuer</dt>
      <dd>
        <code>{c.issuer}</code>
      </dd>
      <dt>Client ID</dt>
      <dd>
        <code>{c.clientId}</code>
      </dd>
      <dt>Client secret</dt>
      <dd data-testid="sso-secret">{c.clientSecretSet ? <span aria-label="stored, hidden">{MASK}</span> : <span className="muted">not set</span>}</dd>
      <dt>Scopes</dt>
      <dd>{(c.scopes ?? []).join(' ') || <span className="muted">openid email profile</span>}</dd>
      <dt>Claims</dt>
      <dd>
        email <code>{c.emailClaim || 'email'}</code>, name <code>{c.nameClaim || 'name'}</code>, groups <code>{c.groupsClaim || 'groups'}</code>
      </dd>
      <dt>Allowed domains</dt>
      <dd>{(c.allowedDomains ?? []).join(', ') || <span className="muted">any</span>}</dd>
      <dt>Require SSO</dt>
      <dd>
        {c.requireSso ? (
          <>
            <Badge tone="info">required</Badge> <span className="muted">break-glass admin: {c.breakGlass}</span>
          </>
        ) : (
          <span className="muted">no: passwords still work</span>
        )}
      </dd>
      <dt>Login URL</dt>
      <dd>
        <code className="break-all">{c.loginUrl}</code> <CopyButton text={c.loginUrl} label="Copy login URL" />
      </dd>
      <dt>Updated</dt>
      <dd>{formatTime(c.updatedAt)}</dd>
    </dl>
  );
}

function SSOEditor({ config, onSaved }: { config?: SSOConfig; onSaved: () => void }) {
  const [f, setF] = useState<SSOForm>(() => ssoFormFrom(config));
  const [local, setLocal] = useState<v.Errors<keyof SSOForm>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const stored = !!config?.clientSecretSet;
  const set = (k: keyof SSOForm) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const err = (k: keyof SSOForm) => local[k] ?? fieldError(error, k);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = ssoErrors(f, stored);
    setLocal(errs);
    setError(undefined);
    if (v.hasErrors(errs)) return;
    setBusy(true);
    try {
      await sso.set(ssoRequest(f));
      onSaved();
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  const known = ['issuer', 'clientId', 'clientSecret', 'scopes', 'emailClaim', 'nameClaim', 'groupsClaim', 'allowedDomains', 'breakGlass'];
  return (
    <section className="panel" aria-labelledby="sso-edit">
      <h2 id="sso-edit">{config ? 'Change single sign-on' : 'Set up single sign-on'}</h2>
      <form onSubmit={submit} noValidate data-testid="sso-form">
        <div className="form-row">
          <Field label="Issuer URL" hint="Where the provider publishes /.well-known/openid-configuration." error={err('issuer')}>
            <input type="url" name="issuer" value={f.issuer} onChange={set('issuer')} autoComplete="off" spellCheck={false} />
          </Field>
          <Field label="Client ID" error={err('clientId')}>
            <input type="text" name="clientId" value={f.clientId} onChange={set('clientId')} autoComplete="off" spellCheck={false} />
          </Field>
        </div>
        <Field label="Client secret" hint={stored ? 'A secret is stored. Leave empty to keep it; what you type replaces it.' : 'Stored encrypted; never shown again.'} error={err('clientSecret')}>
          <input type="password" name="clientSecret" value={f.clientSecret} onChange={set('clientSecret')} autoComplete="new-password" placeholder={stored ? `${MASK} (stored)` : ''} />
        </Field>
        <div className="form-row">
          <Field label="Scopes (optional)" hint="Separated by spaces; default openid email profile." error={err('scopes')}>
            <input type="text" name="scopes" value={f.scopes} onChange={set('scopes')} autoComplete="off" spellCheck={false} />
          </Field>
          <Field label="Allowed email domains" hint="Comma-separated: only emails of these domains may log in through the provider." error={err('allowedDomains')}>
            <input type="text" name="allowedDomains" value={f.allowedDomains} onChange={set('allowedDomains')} autoComplete="off" spellCheck={false} />
          </Field>
        </div>
        <div className="form-row">
          <Field label="Email claim (optional)" error={err('emailClaim')}>
            <input type="text" name="emailClaim" value={f.emailClaim} onChange={set('emailClaim')} placeholder="email" autoComplete="off" />
          </Field>
          <Field label="Name claim (optional)" error={err('nameClaim')}>
            <input type="text" name="nameClaim" value={f.nameClaim} onChange={set('nameClaim')} placeholder="name" autoComplete="off" />
          </Field>
          <Field label="Groups claim (optional)" hint="Groups naming a team make the user its member." error={err('groupsClaim')}>
            <input type="text" name="groupsClaim" value={f.groupsClaim} onChange={set('groupsClaim')} placeholder="groups" autoComplete="off" />
          </Field>
        </div>
        <label className="check">
          <input type="checkbox" name="requireSso" checked={f.requireSso} onChange={(e) => setF({ ...f, requireSso: e.target.checked })} /> Require single sign-on: members can no longer log in
          with a password
        </label>
        {f.requireSso && (
          <Field label="Break-glass admin" hint="The one admin (email) who may still log in with a password, should the provider fail." error={err('breakGlass')}>
            <input type="email" name="breakGlass" value={f.breakGlass} onChange={set('breakGlass')} autoComplete="off" />
          </Field>
        )}
        {error !== undefined && !known.includes((error as ApiError).field ?? '') && <ErrorNote error={error} />}
        <div className="form-buttons">
          <button type="submit" className="button button-primary" disabled={busy}>
            {busy ? 'Saving…' : 'Save single sign-on'}
          </button>
        </div>
      </form>
    </section>
  );
}
