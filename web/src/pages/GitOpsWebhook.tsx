// Settings → GitOps webhook (docs/webhooks.md, "GitOps push webhook"): the account's push
// webhook for the repositories applications deploy from — whether it has a secret, the payload
// URL per git provider — and, for admins, a generated secret shown once or a given one.
import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { gitopsWebhook, type GitOpsWebhook } from '../api/gitops';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { CommandBox } from '../components/CommandBox';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { Dialog } from '../components/Dialog';
import { Field } from '../components/Field';
import { TableScroll } from '../components/ResourceTable';
import { FormDialog } from '../components/FormDialog';
import { PageHeader } from '../components/PageHeader';
import { SettingsNav } from '../components/SettingsNav';
import { ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import { formatTime, relativeTime } from '../lib/format';
import { useResource } from '../lib/useResource';

/** The server's shortest secret (internal/runtimes, minWebhookSecret). */
const MIN_SECRET = 16;

const PROVIDERS: { id: string; label: string; help: string }[] = [
  { id: 'github', label: 'GitHub', help: 'Settings → Webhooks → Add webhook; content type application/json; events: Pushes.' },
  { id: 'gitlab', label: 'GitLab', help: 'Settings → Webhooks; the secret as Secret token; events: Push events and Tag push events.' },
  { id: 'gitea', label: 'Gitea / Forgejo', help: 'Settings → Webhooks → Add webhook → Gitea; content type application/json; events: Push.' },
  { id: 'bitbucket', label: 'Bitbucket', help: 'Repository settings → Webhooks → Add webhook; triggers: Repository push.' },
];

export default function GitOpsWebhookPage() {
  const me = useMe();
  const admin = me.role === 'admin';
  const hook = useResource((signal) => gitopsWebhook.get(signal), []);
  const [confirming, setConfirming] = useState(false);
  const [setting, setSetting] = useState(false);
  const [generated, setGenerated] = useState<GitOpsWebhook>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const w = hook.data;

  const generate = async () => {
    setBusy(true);
    setError(undefined);
    try {
      setGenerated(await gitopsWebhook.set());
      hook.reload({ quiet: true });
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };

  return (
    <div data-page="gitops-webhook">
      <PageHeader
        title="Settings"
        actions={
          admin &&
          w && (
            <>
              <button type="button" className="button" onClick={() => setSetting(true)} disabled={busy}>
                Set a secret
              </button>
              <button type="button" className="button button-primary" onClick={() => (w.configured ? setConfirming(true) : generate())} disabled={busy}>
                {busy ? 'Generating…' : w.configured ? 'Generate a new secret' : 'Generate secret'}
              </button>
            </>
          )
        }
      />
      <SettingsNav />
      <p className="muted">
        Point your git provider's push webhook for the repositories your applications deploy from at this account's payload URL: each verified push makes the applications that follow the
        repository refresh at once instead of at their next poll. Repositories with a pipeline's git trigger need none: their pushes are passed on too.
        {!admin && ' Only admins can set the secret.'}
      </p>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {error !== undefined && <ErrorNote error={error} />}
      {hook.error !== undefined && !w ? (
        <ErrorState error={hook.error} onRetry={hook.reload} />
      ) : !w ? (
        <LoadingRows rows={4} label="Loading the webhook" />
      ) : (
        <>
          <section className="panel panel-wide" aria-labelledby="wh-secret">
            <h2 id="wh-secret">Secret</h2>
            <p data-testid="gitops-webhook-status" data-configured={w.configured}>
              {w.configured ? (
                <>
                  <Badge tone="success">set</Badge> <span title={formatTime(w.createdAt)}>{w.createdAt ? relativeTime(w.createdAt) : ''}</span>
                  <span className="muted"> · stored encrypted; it is never shown again. Setting a new one replaces it at once.</span>
                </>
              ) : (
                <>
                  <Badge tone="warning">not set</Badge> <span className="muted">Deliveries are refused until an admin sets a secret.</span>
                </>
              )}
            </p>
          </section>
          <section className="panel panel-wide" aria-labelledby="wh-urls">
            <h2 id="wh-urls">Payload URLs</h2>
            <p className="muted small">Use the URL of your provider, the secret, and content type application/json; subscribe to push events.</p>
            <TableScroll>
            <table className="table" data-testid="gitops-webhook-urls">
              <thead>
                <tr>
                  <th scope="col">Provider</th>
                  <th scope="col">Payload URL</th>
                  <th scope="col">Where</th>
                </tr>
              </thead>
              <tbody>
                {PROVIDERS.filter((p) => w.urls[p.id]).map((p) => (
                  <tr key={p.id} data-testid={`webhook-url-${p.id}`}>
                    <td className="strong nowrap">{p.label}</td>
                    <td>
                      <span className="url-cell">
                        <code className="small break-all">{w.urls[p.id]}</code>
                        <CopyButton text={w.urls[p.id]} label="Copy URL" />
                      </span>
                    </td>
                    <td className="muted small">{p.help}</td>
                  </tr>
                ))}
                {Object.keys(w.urls)
                  .filter((id) => !PROVIDERS.some((p) => p.id === id))
                  .map((id) => (
                    <tr key={id}>
                      <td className="strong">{id}</td>
                      <td>
                        <span className="url-cell">
                          <code className="small break-all">{w.urls[id]}</code>
                          <CopyButton text={w.urls[id]} label="Copy URL" />
                        </span>
                      </td>
                      <td />
                    </tr>
                  ))}
              </tbody>
            </table>
            </TableScroll>
          </section>
        </>
      )}
      <ConfirmDialog
        open={confirming}
        title="Generate a new secret"
        confirmLabel="Generate a new secret"
        danger
        onClose={() => setConfirming(false)}
        onConfirm={async () => {
          setGenerated(await gitopsWebhook.set());
          hook.reload({ quiet: true });
        }}
      >
        <p>Replace the webhook secret? The old one stops working at once: deliveries signed with it are refused until each provider has the new one.</p>
      </ConfirmDialog>
      {setting && (
        <SetSecretDialog
          onClose={() => setSetting(false)}
          onSet={() => {
            setSetting(false);
            setDone('The webhook secret is set. Give the same secret to each provider.');
            hook.reload({ quiet: true });
          }}
        />
      )}
      {generated?.secret && (
        <Dialog
          open
          title="Webhook secret"
          wide
          onClose={() => setGenerated(undefined)}
          footer={
            <button type="button" className="button button-primary" onClick={() => setGenerated(undefined)}>
              Done
            </button>
          }
        >
          <p>This is the only time the secret is shown: Freshet stores it encrypted and never shows it again. Give it to each provider's webhook with the payload URL.</p>
          <CommandBox text={generated.secret} label="Copy" testId="gitops-webhook-secret" />
          <p className="muted small">Deliveries without a valid signature (or, on GitLab, this token) are refused.</p>
        </Dialog>
      )}
    </div>
  );
}

function SetSecretDialog({ onClose, onSet }: { onClose: () => void; onSet: () => void }) {
  const [secret, setSecret] = useState('');
  const [local, setLocal] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const s = secret.trim();
    const le = !s ? 'Give the secret, or close this and generate one.' : s.length < MIN_SECRET ? `The secret is shorter than ${MIN_SECRET} characters: use a long random one.` : undefined;
    setLocal(le);
    setError(undefined);
    if (le) return;
    setBusy(true);
    try {
      await gitopsWebhook.set(s);
      onSet();
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog title="Set the webhook secret" onClose={onClose} busy={busy} formId="gitops-webhook-secret" submitLabel="Set secret" busyLabel="Setting…" onSubmit={submit}>
      <p className="muted small">For a secret your providers already use. It replaces the current one at once.</p>
      <Field label="Secret" hint={`At least ${MIN_SECRET} characters`} error={local ?? fieldError(error, 'secret')}>
        <input type="password" name="secret" value={secret} onChange={(e) => setSecret(e.target.value)} autoComplete="new-password" spellCheck={false} />
      </Field>
      {error !== undefined && !fieldError(error, 'secret') && <ErrorNote error={error} />}
    </FormDialog>
  );
}
