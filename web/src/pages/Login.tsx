import { useState, type FormEvent } from 'react';
import { ApiError, errorMessage, fieldError } from '../api/client';
import { useSession } from '../app/session';
import { Field } from '../components/Field';
import * as v from '../lib/validate';

const ssoAccountKey = 'freshet.ssoAccount';

export function Login({ reason }: { reason?: string }) {
  const { login } = useSession();
  const [email, setEmail] = useState('');
  const [password, setPassword] = useState('');
  const [errors, setErrors] = useState<v.Errors<'email' | 'password'>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [account, setAccount] = useState(() => localStorage.getItem(ssoAccountKey) ?? '');
  const [accountError, setAccountError] = useState<string>();

  // Single sign-on is the server's redirect flow (authorization code with PKCE): the browser
  // leaves for the account's identity provider and comes back logged in, or to a page of the
  // server's that says why not.
  const sso = (e: FormEvent) => {
    e.preventDefault();
    const a = account.trim();
    if (!a) {
      setAccountError('Account is required: the name of the account whose single sign-on to use.');
      return;
    }
    localStorage.setItem(ssoAccountKey, a);
    window.location.assign(`/auth/sso/${encodeURIComponent(a)}/login`);
  };

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = { email: v.email(email), password: password ? undefined : 'Password is required.' };
    setErrors(errs);
    setError(undefined);
    if (v.hasErrors(errs)) return;
    setBusy(true);
    try {
      await login(email.trim(), password);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  let message: string | undefined;
  if (error instanceof ApiError && error.status === 401 && error.message.startsWith('invalid email or password')) message = 'Wrong email or password.';
  else if (error instanceof ApiError && (error.status === 401 || error.code === 'permission_denied'))
    // The browser still sends a session cookie the server no longer knows (data reset, session
    // expired); the cookie is HttpOnly, so only the user (or the server) can clear it.
    message = `This browser holds an old session the server no longer accepts (${errorMessage(error)}). Clear this site's cookies, then log in again.`;
  else if (error !== undefined) message = errorMessage(error);

  return (
    <div className="login-page">
      <form className="login-card" onSubmit={submit} noValidate aria-labelledby="login-title">
        <div className="brand brand-large">
          <span className="brand-mark" aria-hidden="true" />
          <span>Freshet</span>
        </div>
        <h1 id="login-title">Log in</h1>
        {reason && !error && (
          <div className="notice" role="status">
            {reason}
          </div>
        )}
        <Field label="Email" error={errors.email ?? fieldError(error, 'email')}>
          <input type="email" name="email" autoComplete="username" value={email} onChange={(e) => (setEmail(e.target.value), setErrors({ ...errors, email: undefined }))} autoFocus />
        </Field>
        <Field label="Password" error={errors.password ?? fieldError(error, 'password')}>
          <input type="password" name="password" autoComplete="current-password" value={password} onChange={(e) => (setPassword(e.target.value), setErrors({ ...errors, password: undefined }))} />
        </Field>
        {message && !fieldError(error, 'email') && !fieldError(error, 'password') && (
          <div className="error-note" role="alert">
            {message}
          </div>
        )}
        <button type="submit" className="button button-primary button-block" disabled={busy}>
          {busy ? 'Logging in…' : 'Log in'}
        </button>
        <p className="muted small">
          The first admin's password is printed by <code>freshet up</code> (or set with <code>FRESHET_ADMIN_PASSWORD</code>).
        </p>
      </form>
      <form className="login-card" onSubmit={sso} noValidate aria-labelledby="sso-title">
        <h2 id="sso-title">Single sign-on</h2>
        <Field label="Account" error={accountError}>
          <input type="text" name="account" autoComplete="organization" value={account} onChange={(e) => (setAccount(e.target.value), setAccountError(undefined))} />
        </Field>
        <button type="submit" className="button button-block">
          Continue with single sign-on
        </button>
      </form>
    </div>
  );
}
