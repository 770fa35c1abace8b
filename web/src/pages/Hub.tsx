// The template Hub (docs/hub.md): a catalogue of Argo WorkflowTemplates — those Freshet ships
// with and those of the account's hub sources — with search and categories; a template's
// versions, parameters, templates and README (Markdown rendered as elements, never as HTML);
// and "Use this template", which commits it to a Git Source of a hybrid runtime.
import { useMemo, useState, type FormEvent } from 'react';
import { errorMessage } from '../api/client';
import { runtimeProxy } from '../api/gitops';
import { hub, type HubParameter, type HubTemplate, type HubTemplateDetail, type HubUseResult } from '../api/hub';
import { runtimes } from '../api/rest';
import { href, Link, navigate, useSearchParams } from '../app/router';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { Field } from '../components/Field';
import { FormDialog } from '../components/FormDialog';
import { PageHeader } from '../components/PageHeader';
import { EmptyState, ErrorState, LoadingRows } from '../components/States';
import { Markdown } from '../lib/markdown';
import { defaultRuntime, reachable, unreachableNote } from '../lib/runtimes';
import { useResource } from '../lib/useResource';

/** Templates whose name, description, categories or tags contain q, in category (if set). */
export function filterTemplates(items: HubTemplate[], q: string, category: string): HubTemplate[] {
  const s = q.trim().toLowerCase();
  return items.filter(
    (t) =>
      (!category || t.categories.includes(category)) &&
      (!s || t.name.includes(s) || t.description.toLowerCase().includes(s) || [...t.categories, ...t.tags].some((w) => w.includes(s))),
  );
}

export default function Hub() {
  const list = useResource((signal) => hub.list(signal), []);
  const params = useSearchParams();
  const q = params.get('q') ?? '';
  const category = params.get('category') ?? '';
  const items = list.data?.items ?? [];
  const categories = useMemo(() => [...new Set(items.flatMap((t) => t.categories))].sort(), [items]);
  const shown = filterTemplates(items, q, category);
  const set = (k: string, v: string) => navigate(href('/hub', { q, category, [k]: v || undefined }), { replace: true });
  const problems = (list.data?.sources ?? []).flatMap((s) => s.errors);
  return (
    <div data-page="hub">
      <PageHeader title="Hub">
        WorkflowTemplates for Delivery Pipelines: the templates Freshet ships with and those of your account's hub sources (<code>freshet hub source add</code>).
      </PageHeader>
      <div className="filters">
        <Field label="Search">
          <input type="search" value={q} placeholder="name, description, tag" onChange={(e) => set('q', e.target.value)} />
        </Field>
        <Field label="Category">
          <select value={category} onChange={(e) => set('category', e.target.value)}>
            <option value="">All</option>
            {categories.map((c) => (
              <option key={c} value={c}>
                {c}
              </option>
            ))}
          </select>
        </Field>
      </div>
      {problems.length > 0 && (
        <details className="card" data-testid="hub-source-errors">
          <summary>
            {problems.length} file{problems.length === 1 ? '' : 's'} of hub sources left out
          </summary>
          <ul>
            {problems.map((p) => (
              <li key={p}>
                <code className="wrap">{p}</code>
              </li>
            ))}
          </ul>
        </details>
      )}
      {list.error ? (
        <ErrorState error={list.error} onRetry={() => list.reload()} />
      ) : !list.data ? (
        <LoadingRows label="Loading templates" rows={4} />
      ) : shown.length === 0 ? (
        <EmptyState title="No templates match">Clear the search or choose another category.</EmptyState>
      ) : (
        <ul className="hub-grid" aria-label="Templates">
          {shown.map((t) => (
            <li key={t.name} className="card" data-testid={`hub-template-${t.name}`}>
              <div className="strong">
                <Link to={`/hub/${encodeURIComponent(t.name)}`}>{t.name}</Link> <span className="muted">{t.latestVersion}</span>
              </div>
              <p>{t.description}</p>
              <div>
                {t.categories.map((c) => (
                  <Badge key={c}>{c}</Badge>
                ))}{' '}
                {t.source !== 'builtin' && <span className="muted">from {t.source}</span>}
              </div>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

function ParamTable({ params }: { params: HubParameter[] }) {
  if (params.length === 0) return <p className="muted">None.</p>;
  return (
    <div className="table-scroll">
      <table className="table">
        <thead>
          <tr>
            <th>Name</th>
            <th>Default</th>
            <th>Description</th>
          </tr>
        </thead>
        <tbody>
          {params.map((p) => (
            <tr key={p.name}>
              <td>
                <code>{p.name}</code>
              </td>
              <td>
                {p.required ? <Badge tone="warning">required</Badge> : <code className="wrap">{p.default || '""'}</code>}
                {p.enum.length > 0 && <div className="muted">one of {p.enum.join(', ')}</div>}
              </td>
              <td>{p.description}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function UseDialog({ t, onClose, onDone }: { t: HubTemplateDetail; onClose: () => void; onDone: (r: HubUseResult) => void }) {
  const rts = useResource((signal) => runtimes.list(signal), []);
  const hybrid = (rts.data?.items ?? []).filter((r) => r.type === 'hybrid');
  const [runtime, setRuntime] = useState('');
  const chosen = defaultRuntime(hybrid, runtime);
  const rt = chosen?.name ?? '';
  // A disconnected runtime is not asked (its tunnel answers 502): the form says so instead.
  const ask = chosen !== undefined && reachable(chosen);
  const sources = useResource((signal) => (ask ? runtimeProxy.gitSources(rt, signal) : Promise.resolve({ items: [] })), [rt, ask]);
  const [gitSource, setGitSource] = useState('');
  const gs = gitSource || sources.data?.items[0]?.metadata.name || '';
  const [namespace, setNamespace] = useState('');
  const [name, setName] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      onDone(await hub.use(t.name, { version: t.version, runtime: rt, gitSource: gs, namespace: namespace || undefined, name: name || undefined }));
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog title={`Use ${t.name} ${t.version}`} onClose={onClose} busy={busy} formId="hub-use" submitLabel="Commit" busyLabel="Committing…" submitDisabled={!rt || !gs} onSubmit={submit}>
      <p className="muted">
        Commits the WorkflowTemplate to the Git Source's repository as <code>workflow-templates/{name || t.name}.yaml</code>, with the application that deploys it
        the first time.
      </p>
      <Field label="Runtime" hint={hybrid.length === 0 && rts.data ? 'No hybrid runtime: Delivery Pipelines run on hybrid runtimes.' : undefined}>
        <select value={rt} onChange={(e) => setRuntime(e.target.value)}>
          {hybrid.map((r) => (
            <option key={r.name} value={r.name}>
              {r.name}
              {reachable(r) ? '' : ` (${r.status})`}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Git Source" error={unreachableNote(chosen) ?? (sources.error ? errorMessage(sources.error) : undefined)}>
        <select value={gs} onChange={(e) => setGitSource(e.target.value)}>
          {(sources.data?.items ?? []).map((g) => (
            <option key={g.metadata.name} value={g.metadata.name}>
              {g.metadata.name}
            </option>
          ))}
        </select>
      </Field>
      <Field label="Namespace" hint="Default: the Git Source's destination namespace.">
        <input value={namespace} onChange={(e) => setNamespace(e.target.value)} />
      </Field>
      <Field label="Template name" hint={`Default: ${t.name}.`}>
        <input value={name} onChange={(e) => setName(e.target.value)} />
      </Field>
      {error && (
        <p role="alert" className="error-note">
          {error}
        </p>
      )}
    </FormDialog>
  );
}

export function HubTemplateView({ params }: { params: Record<string, string> }) {
  const name = params.name;
  const version = useSearchParams().get('version') ?? '';
  const me = useMe();
  const d = useResource((signal) => hub.get(name, version || undefined, signal), [name, version]);
  const [using, setUsing] = useState(false);
  const [done, setDone] = useState<HubUseResult | null>(null);
  const t = d.data;
  return (
    <div data-page="hub-template">
      <PageHeader
        title={name}
        actions={
          t && me.role !== 'viewer' ? (
            <button type="button" className="button button-primary" onClick={() => setUsing(true)}>
              Use this template
            </button>
          ) : undefined
        }
      />
      <p>
        <Link to="/hub">All templates</Link>
      </p>
      {d.error ? (
        <ErrorState error={d.error} onRetry={() => d.reload()} />
      ) : !t ? (
        <LoadingRows label={`Loading ${name}`} rows={4} />
      ) : (
        <>
          <p>{t.description}</p>
          <div className="hub-meta">
            <label>
              Version{' '}
              <select value={t.version} onChange={(e) => navigate(href(`/hub/${encodeURIComponent(name)}`, { version: e.target.value }), { replace: true })}>
                {t.versions.map((v) => (
                  <option key={v} value={v}>
                    {v}
                    {v === t.latestVersion ? ' (latest)' : ''}
                  </option>
                ))}
              </select>
            </label>{' '}
            {t.categories.map((c) => (
              <Badge key={c}>{c}</Badge>
            ))}{' '}
            <span className="muted">
              {t.source === 'builtin' ? 'ships with Freshet' : `from hub source ${t.source}`}
              {t.license ? ` · ${t.license}` : ''}
            </span>
          </div>
          {done && (
            <div className="card" role="status" data-testid="hub-used">
              Committed <code>{done.file}</code> to Git Source {done.gitSource} of {done.runtime} at <code>{done.commit.slice(0, 12)}</code>
              {done.applicationCreated ? `, with application ${done.application}` : ''}.
            </div>
          )}
          <h2>Parameters</h2>
          <ParamTable params={t.parameters} />
          <h2>Templates</h2>
          <ul>
            {t.templates.map((e) => (
              <li key={e.name}>
                <code>{e.name}</code>
                {e.name === t.entrypoint && <span className="muted"> (entrypoint)</span>}
                {e.inputs.length > 0 && <span className="muted"> — inputs {e.inputs.map((p) => p.name).join(', ')}</span>}
                {e.description && <div>{e.description}</div>}
              </li>
            ))}
          </ul>
          <h2>README</h2>
          {t.readme ? <Markdown source={t.readme} /> : <p className="muted">This version has no README.</p>}
          <details>
            <summary>Manifest ({t.file})</summary>
            <pre className="wrap" tabIndex={0}>
              <code>{t.manifest}</code>
            </pre>
          </details>
          {using && (
            <UseDialog
              t={t}
              onClose={() => setUsing(false)}
              onDone={(r) => {
                setUsing(false);
                setDone(r);
              }}
            />
          )}
        </>
      )}
    </div>
  );
}
