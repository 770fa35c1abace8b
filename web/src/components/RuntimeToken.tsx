import type { RegisteredRuntime } from '../api/types';
import { runtimeCommand } from '../lib/runtimes';
import { CommandBox } from './CommandBox';

/** The token of a runtime, shown once, with the command that starts its agent by hand. */
export function TokenShown({ rt, verb }: { rt: RegisteredRuntime; verb: string }) {
  const cmd = runtimeCommand(window.location.origin, rt.token);
  return (
    <>
      <p>
        This is the only time the token of <strong>{rt.name}</strong> is shown ({verb}): Freshet keeps only a hash. Run the runtime's agent where it can reach your clusters with:
      </p>
      <CommandBox text={cmd} testId="runtime-command" />
      <p className="strong">Token</p>
      <CommandBox text={rt.token} label="Copy" testId="runtime-token" />
      <AgentNote rt={rt} />
    </>
  );
}

/** How else the token can be passed, and what ingress mode needs besides. */
export function AgentNote({ rt }: { rt: RegisteredRuntime }) {
  return (
    <p className="muted small">
      The token can also go in FRESHET_RUNTIME_TOKEN or a file (<code>--token-file</code>) instead of <code>--token</code>, to keep it out of the process list.
      {rt.accessMode === 'ingress' && ` In ingress mode, also pass --listen and --ingress-url ${rt.ingressUrl ?? ''} so clients reach the app-proxy.`}
    </p>
  );
}
