import { useState, type FormEvent } from 'react';
import { ApiError, errorMessage, fieldError, request } from '../api/client';
import { Field } from '../components/Field';

// The token arrives in the link a reset mail carries (/reset-password?token=fpr_…). It is read
// once and taken out of the address bar, so it stays out of the history.
function takeToken(): string {
  const params = new URLSearchParams(window.location.search);
  const token = params.get('token') ?? '';
  if (token) window.history.replaceState(window.history.state, '', '/reset-password');
  return token;
}

/** Sets a new password with a reset token; needs no login. */
export function ResetPassword() {
  const [token] = useState(takeToken);
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const [mismatch, setMismatch] = useState(false);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState(false);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setMismatch(password !== again);
    if (password !== again) return;
    setBusy(true);
    try {
      await request<void>('/api/v1/auth/password-reset', { method: 'POST', body: { token, newPassword: password }, quiet401: true });
      setDone(true);
    } catch (err) {
      setError(err);
    }
    setBusy(false);
  };

  let message: string | undefined;
  if (error instanceof ApiError && error.status === 401) message = 'This reset link is wrong, used or expired. Ask an admin of your account for a new one.';
  else if (error !== undefined && !fieldError(error, 'newPassword')) message = errorMessage(error);

  return (
    <div className="login-page">
      <form className="login-card" onSubmit={submit} noValidate aria-labelledby="reset-title">
        <div className="brand brand-large">
          <span className="brand-mark" aria-hidden="true" />
          <span>Freshet</span>
        </div>
        <h1 id="reset-title">Set a new password</h1>
        {done ? (
          <>
            <div className="notice" role="status">
              Your password is set, and every session you had has ended.
            </div>
            <a className="button button-primary button-block" href="/login">
              Log in
            </a>
          </>
        ) : !token ? (
          <div className="error-note" role="alert">
            This page needs the link from your password reset mail.
          </div>
        ) : (
          <>
            <Field label="New password" error={fieldError(error, 'newPassword')}>
              <input type="password" name="new-password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} autoFocus />
            </Field>
            <Field label="New password again" error={mismatch ? 'The two passwords differ.' : undefined}>
              <input type="password" name="new-password-again" autoComplete="new-password" value={again} onChange={(e) => (setAgain(e.target.value), setMismatch(false))} />
            </Field>
            {message && (
              <div className="error-note" role="alert">
                {message}
              </div>
            )}
            <button type="submit" className="button button-primary button-block" disabled={busy}>
              {busy ? 'Setting…' : 'Set password'}
            </button>
          </>
        )}
      </form>
    </div>
  );
}
