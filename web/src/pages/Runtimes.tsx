// GitOps runtimes (docs/runtimes.md): the list, adding a hybrid one with the install wizard
// (pages/RuntimeInstall.tsx) and the account's hosted runtime. One runtime's page is
// pages/Runtime.tsx.
import { useState } from 'react';
import { ApiError } from '../api/client';
import { runtimes } from '../api/rest';
import { Link } from '../app/router';
import { useMe } from '../app/session';
import { PageHeader } from '../components/PageHeader';
import { RuntimeStatusBadge } from '../components/RuntimeStatusBadge';
import { TokenRefusalBadge } from '../components/TokenRefusal';
import { VersionWithSkew } from '../components/VersionSkewBadge';
import { ResourceTable } from '../components/ResourceTable';
import { ErrorNote, Flash } from '../components/States';
import { formatTime } from '../lib/format';
import { RUNTIME_POLL_MS, heartbeatLabel, runtimePath } from '../lib/runtimes';
import { useResource } from '../lib/useResource';
import { useVisiblePoll } from '../lib/useVisiblePoll';
import { InstallRuntimeDialog } from './RuntimeInstall';


export default function Runtimes() {
  const me = useMe();
  const admin = me.role === 'admin';
  const list = useResource((signal) => runtimes.list(signal), []);
  useVisiblePoll(list.reload, RUNTIME_POLL_MS);
  const [adding, setAdding] = useState(false);
  const [hostedBusy, setHostedBusy] = useState(false);
  const [hostedError, setHostedError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const items = list.data?.items ?? [];

  const createHosted = async () => {
    setHostedBusy(true);
    setHostedError(undefined);
    try {
      const rt = await runtimes.createHosted();
      setDone(`Created hosted runtime ${rt.name}; it starts in a few seconds.`);
      list.reload();
    } catch (e) {
      // The server checks the name before the one-per-account rule: say which one applies.
      const existing = items.find((r) => r.type === 'hosted');
      setHostedError(
        e instanceof ApiError && e.status === 409 && existing
          ? new ApiError({ code: e.code, status: e.status, requestId: e.requestId, message: `The account already has a hosted runtime (one per account): ${existing.name}.` })
          : e,
      );
    } finally {
      setHostedBusy(false);
    }
  };

  return (
    <div data-page="runtimes">
      <PageHeader
        title="Runtimes"
        actions={
          admin && (
            <>
              <button type="button" className="button" onClick={createHosted} disabled={hostedBusy}>
                {hostedBusy ? 'Creating…' : 'Create hosted runtime'}
              </button>
              <button type="button" className="button button-primary" onClick={() => setAdding(true)}>
                Add runtime
              </button>
            </>
          )
        }
      >
        Runtimes run the GitOps engine (and, when hybrid, CI workflows) where your clusters are. They dial the control plane; it never dials in.
      </PageHeader>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {hostedError !== undefined && (
        <div data-testid="hosted-error">
          <ErrorNote error={hostedError} />
        </div>
      )}
      <ResourceTable
        list={list}
        placeholder={{ label: 'Loading runtimes', rows: 3 }}
        empty={{
          title: 'No runtimes',
          body: (
            <>
              <p>
                Add a hybrid runtime to run in your own cluster: the wizard registers it and gives you the <code>freshet runtime install NAME --token …</code> command to run where kubectl reaches
                the cluster (or <code>freshet runtime --server {window.location.origin} --token …</code> to run the agent on a host with a kubeconfig). Or create the account's hosted runtime, which
                Freshet runs for you (CD only).
              </p>
              {!admin && <p>Only admins can add runtimes.</p>}
            </>
          ),
          action: admin && <button type="button" className="button" onClick={() => setAdding(true)}>Add a runtime</button>,
        }}
        rowKey={(r) => r.id}
        rowProps={(r) => ({ 'data-testid': `runtime-${r.name}` })}
        columns={[
          { header: 'Name', cellClassName: 'strong', cell: (r) => <Link to={runtimePath(r.name)}>{r.name}</Link> },
          { header: 'Type', cell: (r) => r.type },
          { header: 'Access', cell: (r) => r.accessMode },
          {
            header: 'Status',
            cell: (r) => (
              <span className="chips">
                <RuntimeStatusBadge status={r.status} />
                <TokenRefusalBadge r={r} />
              </span>
            ),
            cellProps: () => ({ 'data-testid': 'runtime-status' }),
          },
          { header: 'Version', cellClassName: 'muted', cell: (r) => <VersionWithSkew version={r.version} skew={r.versionSkew} /> },
          { header: 'Clusters', cell: (r) => (r.clusters?.length ? r.clusters.map((c) => c.name).join(', ') : <span className="muted">none</span>) },
          { header: 'Last heartbeat', cell: (r) => heartbeatLabel(r.lastHeartbeat), cellProps: (r) => ({ title: formatTime(r.lastHeartbeat) }) },
        ]}
      />
      {adding && <InstallRuntimeDialog onClose={() => setAdding(false)} onCreated={() => list.reload({ quiet: true })} />}
    </div>
  );
}
