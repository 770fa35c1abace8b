// Settings → Git integrations: where the account meets its git providers — the GitOps push
// webhook, the pipelines' git triggers — and a repository browser that asks a runtime's
// app-proxy (GET …/git/repositories, docs/appproxy.md) to list what a personal access token can
// read, to start a Git Source or an application from one. The token lives in this page's state
// only: never stored, sent only as the X-Git-Token header.
import { Suspense, lazy, useEffect, useRef, useState, type FormEvent } from 'react';
import { errorMessage } from '../api/client';
import { runtimeProxy, type ProviderRepo } from '../api/gitops';
import { runtimes as runtimesApi } from '../api/rest';
import { Link } from '../app/router';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { CopyButton } from '../components/CopyButton';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { DataTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { SettingsNav } from '../components/SettingsNav';
import { EmptyState, Flash, LoadingRows } from '../components/States';
import { GIT_PROVIDERS, repoBrowseErrors, repoQuery, type GitProvider, type RepoBrowseErrors, type RepoBrowseForm } from '../lib/gitops';
import { useResource } from '../lib/useResource';
import { GitSourceDialog } from './Runtime';

const NewApplicationDialog = lazy(() => import('./NewApplication'));

/** The runtime asked by default: the one `freshet up` starts. */
const DEFAULT_RUNTIME = 'local';

type Listing = { state: 'idle' } | { state: 'loading' } | { state: 'done'; items: ProviderRepo[]; runtime: string } | { state: 'error'; error: unknown };

export default function GitIntegrationsPage() {
  const me = useMe();
  const canWrite = me.role !== 'viewer';
  const rts = useResource((signal) => runtimesApi.list(signal), []);
  const [runtime, setRuntime] = useState('');
  const [f, setF] = useState<RepoBrowseForm>({ provider: 'github', baseURL: '', owner: '', token: '' });
  const [local, setLocal] = useState<RepoBrowseErrors>({});
  const [listing, setListing] = useState<Listing>({ state: 'idle' });
  const [gitSourceFor, setGitSourceFor] = useState<{ runtime: string; url: string }>();
  const [appFor, setAppFor] = useState<{ runtime: string; url: string }>();
  const [done, setDone] = useState<string>();
  const abort = useRef<AbortController | undefined>(undefined);
  const items = rts.data?.items ?? [];
  const chosen = runtime || (items.find((r) => r.name === DEFAULT_RUNTIME) ?? items[0])?.name || '';
  const provider = GIT_PROVIDERS.find((p) => p.id === f.provider) ?? GIT_PROVIDERS[0];
  const set = (k: keyof RepoBrowseForm) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });

  useEffect(() => () => abort.current?.abort(), []);

  const list = async (e: FormEvent) => {
    e.preventDefault();
    const errs = repoBrowseErrors(f);
    setLocal(errs);
    if (Object.keys(errs).length || !chosen) return;
    abort.current?.abort();
    const ac = new AbortController();
    abort.current = ac;
    setListing({ state: 'loading' });
    try {
      const res = await runtimeProxy.repositories(chosen, repoQuery(f), f.token.trim(), ac.signal);
      setListing({ state: 'done', items: res?.items ?? [], runtime: chosen });
    } catch (er) {
      if ((er as { name?: string })?.name === 'AbortError') return;
      setListing({ state: 'error', error: er });
    }
  };

  return (
    <div data-page="git-integrations">
      <PageHeader title="Settings" />
      <SettingsNav />
      <section className="panel panel-wide" aria-labelledby="git-overview">
        <h2 id="git-overview">Git integrations</h2>
        <ul className="plain-list">
          <li>
            <Link to="/settings/gitops-webhook">GitOps push webhook</Link>
            <span className="muted"> — one payload URL per provider makes applications refresh on each push instead of at their next poll.</span>
          </li>
          <li>
            CI git triggers are set per pipeline: open a pipeline in <Link to="/pipelines">Pipelines</Link>, then its Triggers tab.
          </li>
        </ul>
      </section>
      <section className="panel panel-wide" aria-labelledby="git-browse">
        <h2 id="git-browse">Browse repositories</h2>
        <p className="muted small">
          A runtime asks the provider (it may reach a self-hosted GitLab or Gitea this server cannot) with your personal access token. The token is sent with this request only and kept
          nowhere: not by this page, this server or the runtime.
        </p>
        <form onSubmit={list} noValidate data-testid="git-browse-form">
          <div className="form-row">
            <Field label="Runtime" hint={rts.error !== undefined ? 'The runtimes could not be read.' : 'The runtime that asks the provider.'}>
              <select name="runtime" value={chosen} onChange={(e) => setRuntime(e.target.value)} disabled={!items.length}>
                {items.length === 0 && <option value="">{rts.data ? 'No runtimes' : 'Loading…'}</option>}
                {items.map((r) => (
                  <option key={r.name} value={r.name}>
                    {r.name}
                    {r.status === 'healthy' ? '' : ` (${r.status})`}
                  </option>
                ))}
              </select>
            </Field>
            <Field label="Provider">
              <select name="provider" value={f.provider} onChange={(e) => setF({ ...f, provider: e.target.value as GitProvider })}>
                {GIT_PROVIDERS.map((p) => (
                  <option key={p.id} value={p.id}>
                    {p.label}
                  </option>
                ))}
              </select>
            </Field>
          </div>
          <div className="form-row">
            <Field label={f.provider === 'gitea' ? 'API URL' : 'API URL (optional)'} hint={provider.apiHint} error={local.baseURL}>
              <input type="text" inputMode="url" name="baseURL" value={f.baseURL} onChange={set('baseURL')} autoComplete="off" spellCheck={false} />
            </Field>
            <Field label="Owner (optional)" hint="An organisation, group or user; empty for the token's own repositories." error={local.owner}>
              <input type="text" name="owner" value={f.owner} onChange={set('owner')} autoComplete="off" spellCheck={false} />
            </Field>
          </div>
          <Field label="Personal access token" hint="Read access to repositories is enough. Never stored." error={local.token}>
            <input type="password" name="gitToken" value={f.token} onChange={set('token')} autoComplete="off" spellCheck={false} />
          </Field>
          <button type="submit" className="button button-primary" disabled={listing.state === 'loading' || !chosen}>
            {listing.state === 'loading' ? 'Listing…' : 'List repositories'}
          </button>
        </form>
      </section>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <section aria-label="Repositories" data-testid="git-repos" data-state={listing.state}>
        {listing.state === 'loading' ? (
          <LoadingRows rows={4} label="Listing repositories" />
        ) : listing.state === 'error' ? (
          // The provider's answer as the runtime words it (a refused token, a rate limit, an unknown
          // owner): not the generic role hint a 403 from this server would get.
          <div className="error-state" role="alert">
            <h3>The repositories could not be listed</h3>
            <p>{errorMessage(listing.error)}</p>
          </div>
        ) : listing.state === 'done' && listing.items.length === 0 ? (
          <EmptyState title="No repositories">The provider lists none for this token{f.owner.trim() ? ' and owner' : ''}.</EmptyState>
        ) : listing.state === 'done' ? (
          <DataTable
            rows={listing.items}
            rowKey={(r) => r.fullName || r.cloneUrl}
            rowProps={(r) => ({ 'data-testid': `git-repo-${r.fullName}` })}
            columns={[
              {
                header: 'Repository',
                cellClassName: 'strong',
                cell: (r) => (
                  <>
                    {r.fullName || r.name} {r.private && <Badge tone="warning">private</Badge>}
                  </>
                ),
              },
              {
                header: 'Clone URL',
                cell: (r) => (
                  <span className="url-cell">
                    <code className="small break-all">{r.cloneUrl}</code>
                    <CopyButton text={r.cloneUrl} label="Copy URL" />
                  </span>
                ),
              },
              { header: 'Default branch', cell: (r) => (r.defaultBranch ? <code>{r.defaultBranch}</code> : <span className="muted">—</span>) },
              { ...timeColumn('Updated', (r: ProviderRepo) => r.updatedAt), cellClassName: 'muted nowrap' },
              actionsColumn(
                (r: ProviderRepo) =>
                  canWrite && (
                    <>
                      <button type="button" className="button button-small" onClick={() => setGitSourceFor({ runtime: listing.runtime, url: r.cloneUrl })} aria-label={`New Git Source from ${r.fullName}`}>
                        New Git Source
                      </button>{' '}
                      <button type="button" className="button button-small" onClick={() => setAppFor({ runtime: listing.runtime, url: r.cloneUrl })} aria-label={`New application from ${r.fullName}`}>
                        New application
                      </button>
                    </>
                  ),
                'actions-col nowrap',
              ),
            ]}
          />
        ) : null}
      </section>
      {gitSourceFor && (
        <GitSourceDialog
          runtime={gitSourceFor.runtime}
          initialRepoURL={gitSourceFor.url}
          onClose={() => setGitSourceFor(undefined)}
          onSaved={(g) => {
            setGitSourceFor(undefined);
            setDone(`Added Git Source ${g.metadata.name} to ${gitSourceFor.runtime}: committed to its installation repository.`);
          }}
        />
      )}
      {appFor && (
        <Suspense fallback={null}>
          <NewApplicationDialog runtimes={items} initialRuntime={appFor.runtime} initialRepoURL={appFor.url} onClose={() => setAppFor(undefined)} />
        </Suspense>
      )}
    </div>
  );
}
