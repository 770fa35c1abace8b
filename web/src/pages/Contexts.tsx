import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { contexts } from '../api/ci';
import type { ConfigContext, ContextType } from '../api/types';
import { href, navigate, useLocation } from '../app/router';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Dialog } from '../components/Dialog';
import { FormDialog } from '../components/FormDialog';
import { Field } from '../components/Field';
import { KeyValueRows } from '../components/KeyValueRows';
import { PageHeader } from '../components/PageHeader';
import { SettingsNav } from '../components/SettingsNav';
import { DataTable, ResourceTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { ErrorNote, Flash, LoadingRows } from '../components/States';
import { formatTime } from '../lib/format';
import { isBlank, mapFromRows, validateRows, type KVRow } from '../lib/kv';
import { resourceNameError } from '../lib/pipelineRefs';
import { useResource } from '../lib/useResource';
import { RowDangerButton } from '../components/RowDangerButton';

export default function Contexts() {
  const me = useMe();
  const canManage = me.role !== 'viewer';
  const { search } = useLocation();
  const open = new URLSearchParams(search).get('context') ?? '';
  const list = useResource((signal) => contexts.list(signal), []);
  const [creating, setCreating] = useState(false);
  const [deleting, setDeleting] = useState<ConfigContext>();
  const [done, setDone] = useState<string>();
  const show = (name?: string) => navigate(href('/settings/contexts', { context: name }), { replace: !name });

  return (
    <div data-page="contexts">
      <PageHeader
        title="Settings"
        actions={
          canManage && (
            <button type="button" className="button button-primary" onClick={() => setCreating(true)}>
              New context
            </button>
          )
        }
      />
      <SettingsNav />
      <p className="muted">
        Contexts hold shared configuration and secrets; pipelines that use a context get its values as variables. Secret values are encrypted at rest and always shown masked; admins may reveal them, and
        each reveal is recorded in the audit log.
      </p>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <ResourceTable
        list={list}
        placeholder={{ label: 'Loading contexts', rows: 4 }}
        empty={{
          title: 'No contexts yet',
          body: <>For example a <code>deploy</code> secret with <code>REGISTRY_PASSWORD</code>, or a <code>defaults</code> config with <code>GO_VERSION</code>.</>,
          action: canManage && <button type="button" className="button" onClick={() => setCreating(true)}>Create a context</button>,
        }}
        rowKey={(c) => c.id}
        rowProps={(c) => ({ 'data-testid': `context-${c.name}` })}
        columns={[
          {
            header: 'Name',
            cellClassName: 'strong',
            cell: (c) => (
              <button type="button" className="link-button" onClick={() => show(c.name)}>
                {c.name}
              </button>
            ),
          },
          { header: 'Type', cell: (c) => <Badge tone={c.type === 'secret' ? 'warning' : 'neutral'}>{c.type}</Badge> },
          {
            header: 'Keys',
            cellClassName: 'ellipsis-cell',
            cell: (c) => (
              <span className="chips">
                {Object.keys(c.values)
                  .sort()
                  .map((k) => (
                    <code key={k} className="chip">
                      {k}
                    </code>
                  ))}
              </span>
            ),
          },
          timeColumn('Updated', (c: ConfigContext) => c.updatedAt),
          actionsColumn((c: ConfigContext) => (
            <>
              <button type="button" className="button button-small" onClick={() => show(c.name)} aria-label={`Show values of ${c.name}`}>
                Values
              </button>{' '}
              {canManage && <RowDangerButton label="Delete" ariaLabel={`Delete context ${c.name}`} onClick={() => setDeleting(c)} />}
            </>
          )),
        ]}
      />
      {open && <ValuesDialog key={open} name={open} admin={me.role === 'admin'} onClose={() => show(undefined)} />}
      {creating && (
        <CreateDialog
          onClose={() => setCreating(false)}
          onCreated={(c) => {
            setDone(`Created ${c.type} context ${c.name}.`);
            list.reload();
          }}
        />
      )}
      <ConfirmDialog
        open={!!deleting}
        title="Delete context"
        confirmLabel="Delete context"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await contexts.remove(deleting.name);
          setDone(`Deleted context ${deleting.name}.`);
          list.reload();
        }}
      >
        <p>
          Delete the {deleting?.type} context <strong>{deleting?.name}</strong>? Pipelines that use it lose its values from their next build.
        </p>
      </ConfirmDialog>
    </div>
  );
}

function ValuesDialog({ name, admin, onClose }: { name: string; admin: boolean; onClose: () => void }) {
  const [decrypt, setDecrypt] = useState(false);
  const res = useResource((signal) => contexts.get(name, decrypt, signal), [name, decrypt]);
  const c = res.data;
  const secret = c?.type === 'secret';
  return (
    <Dialog
      open
      title={`Context ${name}`}
      wide
      onClose={onClose}
      footer={
        <>
          {secret && admin && (
            <button type="button" className="button" onClick={() => setDecrypt(!decrypt)} disabled={res.loading} data-testid="reveal-secrets">
              {decrypt ? 'Hide values' : 'Reveal values'}
            </button>
          )}
          <button type="button" className="button button-primary" onClick={onClose}>
            Close
          </button>
        </>
      }
    >
      {res.error !== undefined ? (
        <ErrorNote error={res.error} />
      ) : !c ? (
        <LoadingRows rows={3} label="Loading values" />
      ) : (
        <>
          <p className="muted small">
            <Badge tone={secret ? 'warning' : 'neutral'}>{c.type}</Badge> · created {formatTime(c.createdAt)} · updated {formatTime(c.updatedAt)}
          </p>
          {secret && (
            <p className="muted small">
              {decrypt ? 'Shown in plain text; this reveal was recorded in the audit log.' : admin ? 'Values are masked. Revealing them is recorded in the audit log.' : 'Values are masked; only admins may reveal them.'}
            </p>
          )}
          <DataTable
            className="table table-compact"
            busy={res.loading}
            rows={Object.keys(c.values).sort()}
            rowKey={(k) => k}
            columns={[
              { header: 'Key', cell: (k) => <code>{k}</code> },
              { header: 'Value', cellClassName: 'break-all', cell: (k) => <code data-testid={`value-${k}`}>{c.values[k]}</code> },
            ]}
          />
        </>
      )}
    </Dialog>
  );
}

function CreateDialog({ onClose, onCreated }: { onClose: () => void; onCreated: (c: ConfigContext) => void }) {
  const [name, setName] = useState('');
  const [type, setType] = useState<ContextType>('secret');
  const [rows, setRows] = useState<KVRow[]>([{ key: '', value: '' }]);
  const [local, setLocal] = useState<{ name?: string; values?: string }>({});
  const [rowErrors, setRowErrors] = useState<(string | undefined)[]>([]);
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = { name: resourceNameError(name, 'Name'), values: rows.every(isBlank) ? 'Give at least one KEY=VALUE.' : undefined };
    const re = validateRows(rows, 'variable');
    setLocal(errs);
    setRowErrors(re);
    setError(undefined);
    if (errs.name || errs.values || re.some(Boolean)) return;
    setBusy(true);
    try {
      const c = await contexts.create(name, type, mapFromRows(rows));
      onClose();
      onCreated(c);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog
      title="New context"
      wide
      onClose={onClose}
      busy={busy}
      formId="create-context"
      submitLabel="Create context"
      busyLabel="Creating…"
      onSubmit={submit}
    >
      <div className="form-row">
        <Field label="Name" error={local.name ?? fieldError(error, 'name')}>
          <input type="text" name="name" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <fieldset className="radio-row radio-field">
          <legend>Type</legend>
          <label className="radio">
            <input type="radio" name="type" value="secret" checked={type === 'secret'} onChange={() => setType('secret')} /> Secret <span className="muted small">encrypted, masked</span>
          </label>
          <label className="radio">
            <input type="radio" name="type" value="config" checked={type === 'config'} onChange={() => setType('config')} /> Config <span className="muted small">plain</span>
          </label>
        </fieldset>
      </div>
      <KeyValueRows label="Values" rows={rows} onChange={setRows} errors={rowErrors} secret={type === 'secret'} hint="Paste KEY=VALUE lines (a .env file) to fill several rows." />
      {local.values && <div className="field-error">{local.values}</div>}
      {error !== undefined && !fieldError(error, 'name') && <ErrorNote error={error} />}
    </FormDialog>
  );
}
