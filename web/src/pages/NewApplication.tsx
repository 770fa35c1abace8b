// New application: an Argo CD Application typed in the YAML editor, sent as YAML to a runtime's
// app-proxy (POST …/applications[?gitSource=NAME], docs/appproxy.md), which commits it to its
// installation repository, or to the Git Source's repository. The runtime's refusal names the
// line and field: it is marked in the editor and listed below it. Loaded when opened.
import { useMemo, useRef, useState, type FormEvent } from 'react';
import { ApiError, errorMessage } from '../api/client';
import { appProxy } from '../api/apps';
import { runtimeProxy } from '../api/gitops';
import { navigate } from '../app/router';
import { Field } from '../components/Field';
import { FormDialog } from '../components/FormDialog';
import { ErrorNote } from '../components/States';
import { YamlEditor, type YamlEditorHandle } from '../components/YamlEditor';
import { appPath } from '../lib/apps';
import { applicationTemplate, manifestIssues } from '../lib/gitops';
import { countLines, marksByLine, sortIssues, type LintIssue } from '../lib/lint';
import { reachable } from '../lib/runtimes';
import { useResource } from '../lib/useResource';

export interface RuntimeChoice {
  name: string;
  status: string;
}

/** The runtimes whose app-proxy can answer now come first; the others are listed as such. */
const usable = reachable;

export default function NewApplicationDialog({
  runtimes,
  initialRuntime,
  initialRepoURL,
  onClose,
}: {
  runtimes: RuntimeChoice[];
  initialRuntime?: string;
  /** The template's source.repoURL (a repository picked in Settings → Git integrations). */
  initialRepoURL?: string;
  onClose: () => void;
}) {
  const first = runtimes.find((r) => r.name === initialRuntime && usable(r)) ?? runtimes.find(usable) ?? runtimes[0];
  const [runtime, setRuntime] = useState(first?.name ?? '');
  const [gitSource, setGitSource] = useState('');
  const [text, setText] = useState(() => applicationTemplate({ repoURL: initialRepoURL }));
  const [error, setError] = useState<unknown>();
  const [issues, setIssues] = useState<LintIssue[]>([]);
  const [busy, setBusy] = useState(false);
  const editor = useRef<YamlEditorHandle>(null);
  const sources = useResource((signal) => (runtime ? runtimeProxy.gitSources(runtime, signal) : Promise.resolve({ items: [] })), [runtime]);
  const lines = countLines(text);
  const marks = useMemo(() => marksByLine(issues, lines), [issues, lines]);
  const chosen = sources.data?.items.find((g) => g.metadata.name === gitSource);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setError(undefined);
    setIssues([]);
    if (!runtime) {
      setError(new ApiError({ code: 'invalid_argument', status: 0, message: 'Choose a runtime first: add one on the Runtimes page.' }));
      return;
    }
    if (!text.trim()) {
      setIssues([{ line: 1, column: 0, message: 'The Application is empty.', severity: 'error' }]);
      return;
    }
    setBusy(true);
    try {
      const a = await appProxy.create(runtime, text, gitSource || undefined);
      onClose();
      navigate(appPath(runtime, a.name));
    } catch (er) {
      setError(er);
      // The runtime says where (code "invalid_argument", 400): "line 13: spec.sourcee: unknown field; …".
      if (er instanceof ApiError && er.status === 400) setIssues(sortIssues(manifestIssues(er.message, er.field).filter((i) => i.line > 0)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <FormDialog title="New application" wide onClose={onClose} busy={busy} formId="new-application" submitLabel="Create application" busyLabel="Creating…" onSubmit={submit}>
      <div className="form-row">
        <Field label="Runtime" hint="It commits the application and syncs it to its clusters.">
          <select
            name="runtime"
            value={runtime}
            onChange={(e) => {
              setRuntime(e.target.value);
              setGitSource('');
            }}
          >
            {runtimes.length === 0 && <option value="">No runtimes</option>}
            {runtimes.map((r) => (
              <option key={r.name} value={r.name} disabled={!usable(r)}>
                {r.name}
                {usable(r) ? '' : ` (${r.status})`}
              </option>
            ))}
          </select>
        </Field>
        <Field
          label="Git Source (optional)"
          hint={
            sources.error !== undefined
              ? `Git Sources could not be read: ${errorMessage(sources.error)}`
              : chosen
                ? `Written to ${chosen.spec.path ? chosen.spec.path.replace(/\/+$/, '') + '/' : ''}NAME.yaml in ${chosen.spec.repoURL}`
                : 'None: apps/NAME.yaml in the runtime\u2019s installation repository'
          }
        >
          <select name="gitSource" value={gitSource} onChange={(e) => setGitSource(e.target.value)} disabled={!sources.data}>
            <option value="">None — the installation repository</option>
            {sources.data?.items.map((g) => (
              <option key={g.metadata.name} value={g.metadata.name}>
                {g.metadata.name}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <p className="strong">
        Application
      </p>
      <YamlEditor ref={editor} value={text} onChange={setText} marks={marks} label="Application (YAML)" describedBy="new-app-issues" height="min(40vh, 340px)" />
      <ul id="new-app-issues" className="issues" data-testid="new-app-issues">
        {issues.map((i, k) => (
          <li key={k}>
            <button type="button" className="issue issue-error" onClick={() => editor.current?.jumpTo(i.line, 1)} data-line={i.line}>
              <span className="issue-sev" aria-hidden="true">
                ✕
              </span>
              <span>
                <span className="issue-where">Line {i.line}</span>
                {i.field && <code className="issue-field">{i.field}</code>}
                <span className="issue-msg">{i.message}</span>
              </span>
            </button>
          </li>
        ))}
      </ul>
      {error !== undefined && issues.length === 0 && <ErrorNote error={error} />}
      <p className="muted small">An Argo CD Application: source (repoURL, path, targetRevision), destination (a cluster name or server, and a namespace), and a syncPolicy to sync by itself.</p>
    </FormDialog>
  );
}
