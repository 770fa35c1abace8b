// The install wizard (docs/runtimes.md, "Installing a hybrid runtime"): a runtime's name, access
// mode, installation repository and kube context, one step each; then it registers the runtime
// (POST /api/v1/runtimes, the token answered once), shows the exact `freshet runtime install …
// --token …` command to run where kubectl reaches the cluster, and waits for the runtime to
// report healthy.
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { ApiError, errorMessage, fieldError } from '../api/client';
import { runtimes } from '../api/rest';
import type { RegisteredRuntime } from '../api/types';
import { Link } from '../app/router';
import { CommandBox } from '../components/CommandBox';
import { Dialog } from '../components/Dialog';
import { Field } from '../components/Field';
import { AgentNote } from '../components/RuntimeToken';
import { RuntimeStatusBadge } from '../components/RuntimeStatusBadge';
import { ErrorNote, Spinner } from '../components/States';
import { INSTALL_STEPS, ingressHostError, installCommand, installStepOf, repoURLError, runtimeNameError } from '../lib/gitops';
import { runtimeCommand, runtimePath } from '../lib/runtimes';

/** How often the new runtime is asked for while the wizard waits (it heartbeats every 5 s). */
const WAIT_POLL_MS = 2_000;

type Mode = 'tunnel' | 'ingress';
interface LocalErrors {
  name?: string;
  host?: string;
  repo?: string;
}

export function InstallRuntimeDialog({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }) {
  const [step, setStep] = useState(0);
  const [name, setName] = useState('');
  const [mode, setMode] = useState<Mode>('tunnel');
  const [host, setHost] = useState('');
  const [repo, setRepo] = useState('');
  const [context, setContext] = useState('');
  const [local, setLocal] = useState<LocalErrors>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<RegisteredRuntime>();
  const form = useRef<HTMLFormElement>(null);
  const last = INSTALL_STEPS.length - 1;

  // Each step starts at its first control.
  useEffect(() => {
    form.current?.querySelector<HTMLElement>('input:checked, input, select')?.focus();
  }, [step]);

  const check = (s: number): LocalErrors => {
    if (s === 0) return { name: runtimeNameError(name) };
    if (s === 1) return { host: mode === 'ingress' ? ingressHostError(host) : undefined };
    if (s === 2) return { repo: repoURLError(repo) };
    return {};
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = check(step);
    setLocal(errs);
    if (errs.name || errs.host || errs.repo) return;
    if (step < last) {
      setStep(step + 1);
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const rt = await runtimes.register({ name, accessMode: mode, ...(mode === 'ingress' ? { ingressHost: host.trim() } : {}), ...(repo.trim() ? { repo: repo.trim() } : {}) });
      setCreated(rt);
      onCreated();
    } catch (err) {
      // Back to the step where the field the server refused is entered.
      const s = installStepOf(err instanceof ApiError ? err.field : undefined);
      if (s !== undefined) setStep(s);
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (created) return <Installing rt={created} context={context.trim()} ingressHost={host.trim()} repo={repo.trim()} onClose={onClose} />;

  const serverField = error instanceof ApiError ? error.field : undefined;
  const shownInline = serverField === 'name' || serverField === 'ingressHost' || serverField === 'repo';
  return (
    <Dialog
      open
      title="Add runtime"
      wide
      onClose={onClose}
      busy={busy}
      footer={
        <>
          {step === 0 ? (
            <button type="button" className="button" onClick={onClose} disabled={busy}>
              Cancel
            </button>
          ) : (
            <button type="button" className="button" onClick={() => setStep(step - 1)} disabled={busy}>
              Back
            </button>
          )}
          <button type="submit" form="install-runtime" className="button button-primary" disabled={busy}>
            {step < last ? 'Next' : busy ? 'Registering…' : 'Register runtime'}
          </button>
        </>
      }
    >
      <ol className="wizard-steps" aria-label="Steps">
        {INSTALL_STEPS.map((s, i) => (
          <li key={s} className={i === step ? 'wizard-step wizard-step-current' : i < step ? 'wizard-step wizard-step-done' : 'wizard-step'} aria-current={i === step ? 'step' : undefined}>
            <span className="wizard-step-n" aria-hidden="true">
              {i < step ? '✓' : i + 1}
            </span>
            {s}
          </li>
        ))}
      </ol>
      <form id="install-runtime" ref={form} onSubmit={submit} noValidate data-step={INSTALL_STEPS[step]}>
        {step === 0 && (
          <>
            <p className="muted small">A hybrid runtime runs in your Kubernetes cluster: it syncs applications from git there, and dials this server, which never dials in.</p>
            <Field label="Name" hint="1–40 lowercase letters, digits and '-', starting and ending with a letter or digit, e.g. edge-1" error={local.name ?? fieldError(error, 'name')}>
              <input type="text" name="name" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" spellCheck={false} />
            </Field>
          </>
        )}
        {step === 1 && (
          <>
            <fieldset className="check-list">
              <legend>Access mode</legend>
              <label className="radio">
                <input type="radio" name="accessMode" value="tunnel" checked={mode === 'tunnel'} onChange={() => setMode('tunnel')} />
                <span>
                  <strong>Tunnel</strong> <span className="muted">— the runtime dials out to this server; nothing needs to reach it. Recommended.</span>
                </span>
              </label>
              <label className="radio">
                <input type="radio" name="accessMode" value="ingress" checked={mode === 'ingress'} onChange={() => setMode('ingress')} />
                <span>
                  <strong>Ingress</strong> <span className="muted">— clients reach the runtime's app-proxy at a host of its own, through an Ingress.</span>
                </span>
              </label>
            </fieldset>
            {mode === 'ingress' && (
              <Field label="Ingress host" hint="Host name or https URL, e.g. edge-1.example.com" error={local.host ?? fieldError(error, 'ingressHost')}>
                <input type="text" name="ingressHost" value={host} onChange={(e) => setHost(e.target.value)} autoComplete="off" spellCheck={false} />
              </Field>
            )}
          </>
        )}
        {step === 2 && (
          <Field
            label="Installation repository (optional)"
            hint="A git repository where the runtime keeps its applications, projects and Git Sources as files; install initialises it. Without one, applications and Git Sources cannot be created from Freshet."
            error={local.repo ?? fieldError(error, 'repo')}
          >
            <input type="text" name="repo" value={repo} onChange={(e) => setRepo(e.target.value)} placeholder="https://github.com/acme/edge-1-runtime.git" autoComplete="off" spellCheck={false} />
          </Field>
        )}
        {step === 3 && (
          <>
            <Field label="Kube context (optional)" hint="The kubeconfig context of the cluster to install in; empty for your current context.">
              <input type="text" name="context" value={context} onChange={(e) => setContext(e.target.value)} placeholder="prod-eu" autoComplete="off" spellCheck={false} />
            </Field>
            <dl className="props" data-testid="install-summary">
              <dt>Name</dt>
              <dd>{name}</dd>
              <dt>Access</dt>
              <dd>{mode === 'ingress' ? `ingress · ${host.trim()}` : 'tunnel'}</dd>
              <dt>Repository</dt>
              <dd>{repo.trim() ? <code>{repo.trim()}</code> : <span className="muted">none</span>}</dd>
              <dt>Kube context</dt>
              <dd>{context.trim() ? <code>{context.trim()}</code> : <span className="muted">current</span>}</dd>
            </dl>
            <p className="muted small">Registering creates the runtime now and shows its token once, with the command that installs it.</p>
          </>
        )}
        {error !== undefined && !shownInline && <ErrorNote error={error} />}
      </form>
    </Dialog>
  );
}

/** The token shown once with the install command, then the wait until the runtime is healthy. */
function Installing({ rt, context, ingressHost, repo, onClose }: { rt: RegisteredRuntime; context: string; ingressHost: string; repo: string; onClose: () => void }) {
  const origin = window.location.origin;
  const cmd = installCommand({ name: rt.name, token: rt.token, server: origin, accessMode: rt.accessMode, ingressHost, repo, context });
  const [status, setStatus] = useState<string>(rt.status);
  const [pollError, setPollError] = useState<unknown>();
  const healthy = status === 'healthy';

  useEffect(() => {
    if (healthy) return;
    const ctl = new AbortController();
    const t = setInterval(() => {
      if (document.hidden) return;
      runtimes.get(rt.name, ctl.signal).then(
        (r) => {
          setStatus(r.status);
          setPollError(undefined);
        },
        (e) => !ctl.signal.aborted && setPollError(e),
      );
    }, WAIT_POLL_MS);
    return () => {
      clearInterval(t);
      ctl.abort();
    };
  }, [rt.name, healthy]);

  return (
    <Dialog
      open
      title="Runtime registered"
      wide
      onClose={onClose}
      footer={
        <>
          <Link to={runtimePath(rt.name)} className="button">
            Open {rt.name}
          </Link>
          <button type="button" className="button button-primary" onClick={onClose}>
            Done
          </button>
        </>
      }
    >
      <p>
        <strong>{rt.name}</strong> is registered. This is the only time its token is shown: Freshet keeps only a hash. Install it with the freshet CLI where kubectl reaches the cluster, logged in to
        this server as an admin (<code>freshet login --server {origin}</code>):
      </p>
      <CommandBox text={cmd} testId="install-command" />
      <p className="muted small">
        It checks the cluster and your rights, applies the runtime's manifests (namespace <code>freshet-runtime</code>) and waits until the runtime is healthy; run it again after an interruption and
        it continues. <code>--dry-run</code> prints the manifests instead.
        {repo && ' For a private repository add --git-token (or set FRESHET_GIT_TOKEN).'}
      </p>
      <div className={healthy ? 'wizard-wait wizard-wait-done' : 'wizard-wait'} role="status" aria-live="polite" data-testid="install-status" data-status={status}>
        {healthy ? (
          <span>
            <span aria-hidden="true">✓</span> <strong>{rt.name}</strong> is connected and healthy. <Link to={runtimePath(rt.name)}>Open its page</Link>
          </span>
        ) : (
          <>
            <Spinner label="Waiting" />
            <span>
              {status === 'installing' ? 'Waiting for the runtime to connect…' : 'Waiting for the runtime to report healthy…'} Status: <RuntimeStatusBadge status={status} />
            </span>
          </>
        )}
        {pollError !== undefined && <span className="muted small">({errorMessage(pollError)})</span>}
      </div>
      <details className="wizard-more">
        <summary>Or run the agent yourself, outside Kubernetes</summary>
        <p className="muted small">On a host with a kubeconfig for the cluster:</p>
        <CommandBox text={runtimeCommand(origin, rt.token)} testId="runtime-command" />
        <p className="strong">Token</p>
        <CommandBox text={rt.token} label="Copy" testId="runtime-token" />
        <AgentNote rt={rt} />
      </details>
    </Dialog>
  );
}
