import { Suspense, lazy, useEffect, useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { runners } from '../api/ci';
import type { RegisteredRunner, Runner } from '../api/types';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { VersionWithSkew } from '../components/VersionSkewBadge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { Dialog } from '../components/Dialog';
import { FormDialog } from '../components/FormDialog';
import { Field } from '../components/Field';
import { KeyValueRows } from '../components/KeyValueRows';
import { PageHeader } from '../components/PageHeader';
import { SettingsNav } from '../components/SettingsNav';
import { ResourceTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { ErrorNote, Flash } from '../components/States';
import { mapFromRows, validateRows, type KVRow } from '../lib/kv';
import { resourceNameError } from '../lib/pipelineRefs';
import { useResource } from '../lib/useResource';
import { RowDangerButton } from '../components/RowDangerButton';

const BuildTrends = lazy(() => import('../components/BuildTrends'));

/** The command that starts a registered runner on another machine. */
export function runnerCommand(server: string, token: string): string {
  return `freshet runner --server ${server} --token ${token}`;
}

export default function Runners() {
  const me = useMe();
  const admin = me.role === 'admin';
  const list = useResource((signal) => runners.list(signal), []);
  const [registering, setRegistering] = useState(false);
  const [deleting, setDeleting] = useState<Runner>();
  const [done, setDone] = useState<string>();

  // Connection state changes on its own: look again every 10 s.
  useEffect(() => {
    const t = setInterval(() => list.reload({ quiet: true }), 10_000);
    return () => clearInterval(t);
  }, [list.reload]);

  return (
    <div data-page="runners">
      <PageHeader
        title="Settings"
        actions={
          admin && (
            <button type="button" className="button button-primary" onClick={() => setRegistering(true)}>
              Register runner
            </button>
          )
        }
      />
      <SettingsNav />
      <p className="muted">
        Runners take builds from the control plane and run their steps. <code>freshet up</code> starts one in-process; register more to run builds on other machines.
        {!admin && ' Only admins can register or delete runners.'}
      </p>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <ResourceTable
        list={list}
        placeholder={{ label: 'Loading runners', rows: 3 }}
        empty={{
          title: 'No runners',
          body: 'Builds wait in the queue until a runner connects.',
          action: admin && <button type="button" className="button" onClick={() => setRegistering(true)}>Register a runner</button>,
        }}
        rowKey={(r) => r.id}
        rowProps={(r) => ({ 'data-testid': `runner-${r.name}` })}
        columns={[
          { header: 'Name', cellClassName: 'strong', cell: (r) => r.name },
          { header: 'Status', cell: (r) => <Badge tone={r.connected ? 'success' : 'neutral'}>{r.connected ? '● connected' : '○ not connected'}</Badge> },
          { header: 'Version', cellClassName: 'muted', cell: (r) => <VersionWithSkew version={typeof r.info?.version === 'string' ? r.info.version : undefined} skew={r.versionSkew} /> },
          {
            header: 'Labels',
            cell: (r) => (
              <span className="chips">
                {Object.entries(r.labels ?? {}).map(([k, v]) => (
                  <code key={k} className="chip">
                    {k}={v}
                  </code>
                ))}
                {Object.keys(r.labels ?? {}).length === 0 && <span className="muted">—</span>}
              </span>
            ),
          },
          { header: 'Host', cellClassName: 'muted small', cell: runnerHost },
          timeColumn('Last seen', (r: Runner) => r.lastSeen, 'never'),
          timeColumn('Registered', (r: Runner) => r.createdAt),
          actionsColumn((r: Runner) => admin && <RowDangerButton label="Delete" ariaLabel={`Delete runner ${r.name}`} onClick={() => setDeleting(r)} />),
        ]}
      />
      <h2 className="section-title">Queue and utilisation</h2>
      <Suspense fallback={<div className="chart-placeholder skeleton-row" role="status" aria-label="Loading build trends" />}>
        <BuildTrends charts={['queue']} />
      </Suspense>
      {registering && <RegisterDialog onClose={() => setRegistering(false)} onCreated={() => list.reload()} />}
      <ConfirmDialog
        open={!!deleting}
        title="Delete runner"
        confirmLabel="Delete runner"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await runners.remove(deleting.id);
          setDone(`Deleted runner ${deleting.name}.`);
          list.reload();
        }}
      >
        <p>
          Delete <strong>{deleting?.name}</strong>? Its token stops working; builds it is running are queued again or fail, as their pipelines say.
        </p>
      </ConfirmDialog>
    </div>
  );
}

/** Where a runner runs: its host, executors and concurrency, as it last reported them (its version has a column). */
function runnerHost(r: Runner) {
  if (!r.info?.hostname) return 'never connected';
  return (
    <>
      {String(r.info.hostname)}
      {r.info.executors?.length ? ` · ${r.info.executors.join(', ')}` : ''}
      {r.info.concurrency ? ` · ${r.info.concurrency} at once` : ''}
    </>
  );
}

function RegisterDialog({ onClose, onCreated }: { onClose: () => void; onCreated: () => void }) {
  const [name, setName] = useState('');
  const [labels, setLabels] = useState<KVRow[]>([{ key: '', value: '' }]);
  const [local, setLocal] = useState<string>();
  const [rowErrors, setRowErrors] = useState<(string | undefined)[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<RegisteredRunner>();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ne = resourceNameError(name, 'Name');
    const re = validateRows(labels, 'label');
    setLocal(ne);
    setRowErrors(re);
    setError(undefined);
    if (ne || re.some(Boolean)) return;
    setBusy(true);
    try {
      setCreated(await runners.register(name, mapFromRows(labels)));
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  if (created) {
    const cmd = runnerCommand(window.location.origin, created.token);
    return (
      <Dialog
        open
        title="Runner registered"
        wide
        onClose={onClose}
        footer={
          <button type="button" className="button button-primary" onClick={onClose}>
            Done
          </button>
        }
      >
        <p>
          This is the only time the token of <strong>{created.name}</strong> is shown: Freshet keeps only a hash. Start the runner on its machine with:
        </p>
        <div className="secret-box">
          <code data-testid="runner-command">{cmd}</code>
          <CopyButton text={cmd} label="Copy command" />
        </div>
        <p className="strong">Token</p>
        <div className="secret-box">
          <code data-testid="runner-token">{created.token}</code>
          <CopyButton text={created.token} />
        </div>
        <p className="muted small">The token can also go in the FRESHET_RUNNER_TOKEN environment variable instead of --token, to keep it out of the process list.</p>
      </Dialog>
    );
  }
  return (
    <FormDialog
      title="Register runner"
      wide
      onClose={onClose}
      busy={busy}
      formId="register-runner"
      submitLabel="Register"
      busyLabel="Registering…"
      onSubmit={submit}
    >
      <Field label="Name" hint="e.g. build-host-1" error={local ?? fieldError(error, 'name')}>
        <input type="text" name="name" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" spellCheck={false} />
      </Field>
      <KeyValueRows label="Labels" rows={labels} onChange={setLabels} errors={rowErrors} keyPlaceholder="label" addLabel="Add label" hint="Pipelines that ask for labels run only on runners that have them." />
      {error !== undefined && !fieldError(error, 'name') && <ErrorNote error={error} />}
    </FormDialog>
  );
}
