// A pipeline's triggers: git webhooks (URL and secret shown once) and cron schedules.
import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { pipelines } from '../api/ci';
import { gitProviders, type CreatedTrigger, type GitProvider, type Pipeline, type Trigger } from '../api/types';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { CopyButton } from '../components/CopyButton';
import { Dialog } from '../components/Dialog';
import { FormDialog } from '../components/FormDialog';
import { Field } from '../components/Field';
import { KeyValueRows } from '../components/KeyValueRows';
import { ResourceTable, actionsColumn, timeColumn } from '../components/ResourceTable';
import { ErrorNote, Flash } from '../components/States';
import { isBlank, mapFromRows, validateRows, type KVRow } from '../lib/kv';
import { useResource } from '../lib/useResource';
import { RowDangerButton } from '../components/RowDangerButton';

const GIT_EVENTS = [
  { value: 'push.heads', label: 'Push to a branch' },
  { value: 'push.tags', label: 'Push of a tag' },
  { value: 'pullrequest', label: 'Pull request (any action)' },
  { value: 'release', label: 'Release' },
] as const;

const PROVIDER_HELP: Record<GitProvider, string> = {
  github: 'In the repository: Settings → Webhooks → Add webhook. Payload URL: the URL below; content type application/json; secret: the secret below.',
  gitlab: 'In the project: Settings → Webhooks. URL: the URL below; secret token: the secret below.',
  gitea: 'In the repository: Settings → Webhooks → Add webhook → Gitea. Target URL: the URL below; content type application/json; secret: the secret below.',
  bitbucket: 'In the repository: Repository settings → Webhooks → Add webhook. URL: the URL below; secret: the secret below.',
};

export function TriggersPanel({ pipeline, canEdit }: { pipeline: Pipeline; canEdit: boolean }) {
  const list = useResource((signal) => pipelines.triggers(pipeline.id, signal), [pipeline.id]);
  const [adding, setAdding] = useState<'git' | 'cron'>();
  const [deleting, setDeleting] = useState<Trigger>();
  const [done, setDone] = useState<string>();
  return (
    <div data-testid="triggers">
      <div className="section-row">
        <p className="muted small">Triggers start builds on git events (a webhook from your git provider) or on a schedule.</p>
        {canEdit && (
          <div className="page-actions">
            <button type="button" className="button" onClick={() => setAdding('git')}>
              Add git trigger
            </button>
            <button type="button" className="button" onClick={() => setAdding('cron')}>
              Add cron trigger
            </button>
          </div>
        )}
      </div>
      <Flash text={done} onDone={() => setDone(undefined)} />
      <ResourceTable
        list={list}
        placeholder={{ label: 'Loading triggers', rows: 3 }}
        empty={{ title: 'No triggers', body: 'This pipeline runs only when someone runs it.' }}
        rowKey={(t) => t.id}
        rowProps={(t) => ({ 'data-testid': `trigger-${t.type}` })}
        columns={[
          { header: 'Type', cell: (t) => <Badge tone={t.type === 'git' ? 'info' : 'neutral'}>{t.type === 'git' ? t.provider ?? 'git' : 'cron'}</Badge> },
          { header: 'When', cell: triggerWhen },
          { header: 'Details', cellClassName: 'trigger-details', cell: triggerDetails },
          timeColumn('Created', (t: Trigger) => t.createdAt),
          actionsColumn((t: Trigger) => canEdit && <RowDangerButton label="Delete" ariaLabel={`Delete trigger ${t.name}`} onClick={() => setDeleting(t)} />),
        ]}
      />
      {adding === 'git' && <GitTriggerDialog pipeline={pipeline} onClose={() => setAdding(undefined)} onCreated={() => list.reload()} />}
      {adding === 'cron' && (
        <CronTriggerDialog
          pipeline={pipeline}
          onClose={() => setAdding(undefined)}
          onCreated={(t) => {
            setDone(`Added ${t.name}.`);
            list.reload();
          }}
        />
      )}
      <ConfirmDialog
        open={!!deleting}
        title="Delete trigger"
        confirmLabel="Delete trigger"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await pipelines.removeTrigger(deleting.id);
          setDone(`Deleted ${deleting.name}.`);
          list.reload();
        }}
      >
        <p>
          Delete the trigger <strong>{deleting?.name}</strong>? {deleting?.type === 'git' ? 'Deliveries to its webhook URL are refused from now on.' : 'The schedule stops.'}
        </p>
      </ConfirmDialog>
    </div>
  );
}

/** When a trigger fires: the repository and its events, or the schedule. */
function triggerWhen(t: Trigger) {
  return t.type === 'git' ? (
    <>
      <strong>{t.git?.repo}</strong> <span className="muted">· {t.git?.events.join(', ')}</span>
      {t.git?.branchRegex && <div className="muted small">branches matching <code>{t.git.branchRegex}</code></div>}
    </>
  ) : (
    <>
      <code>{t.expression}</code> <span className="muted">{t.timezone || 'UTC'}</span>
    </>
  );
}

/** A git trigger's webhook URL to copy; a cron trigger's branch and variables. */
function triggerDetails(t: Trigger) {
  if (t.type === 'git' && t.webhookUrl) {
    return (
      <span className="inline-copy">
        <code className="small" title="Webhook URL">
          {t.webhookUrl}
        </code>
        <CopyButton text={t.webhookUrl} label="Copy URL" />
      </span>
    );
  }
  return (
    <span className="muted">
      {t.branch ? (
        <>
          branch <code>{t.branch}</code>
        </>
      ) : (
        'no branch'
      )}
      {t.variables && Object.keys(t.variables).length > 0 && ` · ${Object.keys(t.variables).join(', ')}`}
    </span>
  );
}

function GitTriggerDialog({ pipeline, onClose, onCreated }: { pipeline: Pipeline; onClose: () => void; onCreated: () => void }) {
  const [provider, setProvider] = useState<GitProvider>('github');
  const [repo, setRepo] = useState('');
  const [events, setEvents] = useState<string[]>(['push.heads']);
  const [branchRegex, setBranchRegex] = useState('');
  const [local, setLocal] = useState<{ repo?: string; events?: string }>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [created, setCreated] = useState<CreatedTrigger>();

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = repo.trim();
    const errs = {
      repo: !r ? 'Give the repository as owner/name.' : !/^[^/\s]+(\/[^/\s]+)+$/.test(r) ? `"${r}" is not owner/name.` : undefined,
      events: events.length === 0 ? 'Choose at least one event.' : undefined,
    };
    setLocal(errs);
    setError(undefined);
    if (errs.repo || errs.events) return;
    setBusy(true);
    try {
      const t = await pipelines.addTrigger(pipeline.id, { type: 'git', provider, git: { repo: r, events, branchRegex: branchRegex.trim() || undefined } });
      setCreated(t);
      onCreated();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  if (created) {
    return (
      <Dialog
        open
        title="Git trigger added"
        wide
        onClose={onClose}
        footer={
          <button type="button" className="button button-primary" onClick={onClose}>
            Done
          </button>
        }
      >
        <p>{PROVIDER_HELP[created.provider ?? provider]}</p>
        <p className="strong">Webhook URL</p>
        <div className="secret-box">
          <code data-testid="webhook-url">{created.webhookUrl}</code>
          <CopyButton text={created.webhookUrl ?? ''} />
        </div>
        {created.secret && (
          <>
            <p className="strong">Secret — shown only now</p>
            <div className="secret-box">
              <code data-testid="webhook-secret">{created.secret}</code>
              <CopyButton text={created.secret} />
            </div>
            <p className="muted small">Freshet stores the secret encrypted and never shows it again; deliveries without a valid signature are refused.</p>
          </>
        )}
      </Dialog>
    );
  }

  return (
    <FormDialog
      title="Add git trigger"
      wide
      onClose={onClose}
      busy={busy}
      formId="git-trigger"
      submitLabel="Add trigger"
      busyLabel="Adding…"
      onSubmit={submit}
    >
      <div className="form-row">
        <Field label="Provider" error={fieldError(error, 'provider')}>
          <select value={provider} onChange={(e) => setProvider(e.target.value as GitProvider)}>
            {gitProviders.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Repository" hint="owner/name" error={local.repo ?? fieldError(error, 'repo') ?? fieldError(error, 'git.repo')}>
          <input type="text" value={repo} onChange={(e) => setRepo(e.target.value)} placeholder="acme/api" autoComplete="off" spellCheck={false} />
        </Field>
      </div>
      <fieldset className="check-list">
        <legend>Events</legend>
        {GIT_EVENTS.map((ev) => (
          <label key={ev.value} className="check">
            <input type="checkbox" checked={events.includes(ev.value)} onChange={(e) => setEvents(e.target.checked ? [...events, ev.value] : events.filter((x) => x !== ev.value))} />
            {ev.label} <code className="muted small">{ev.value}</code>
          </label>
        ))}
        {local.events && <div className="field-error">{local.events}</div>}
      </fieldset>
      <Field label="Branches" hint="A regular expression (RE2), e.g. ^main$ or /^release\//i; empty for every branch." error={fieldError(error, 'branchRegex') ?? fieldError(error, 'git.branchRegex')}>
        <input type="text" value={branchRegex} onChange={(e) => setBranchRegex(e.target.value)} placeholder="^main$" autoComplete="off" spellCheck={false} />
      </Field>
      <p className="muted small">A webhook secret is generated and shown once after you add the trigger.</p>
      {error !== undefined && <ErrorNote error={error} />}
    </FormDialog>
  );
}

function CronTriggerDialog({ pipeline, onClose, onCreated }: { pipeline: Pipeline; onClose: () => void; onCreated: (t: CreatedTrigger) => void }) {
  const [expression, setExpression] = useState('0 3 * * *');
  const [timezone, setTimezone] = useState('');
  const [branch, setBranch] = useState('main');
  const [vars, setVars] = useState<KVRow[]>([{ key: '', value: '' }]);
  const [rowErrors, setRowErrors] = useState<(string | undefined)[]>([]);
  const [local, setLocal] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const x = expression.trim();
    const le = !x ? 'Give a schedule, e.g. 0 3 * * * or @hourly.' : !x.startsWith('@') && x.split(/\s+/).length !== 5 ? `"${x}" is not a cron schedule: five fields (minute hour day month weekday) or @hourly, @daily, …` : undefined;
    const errs = validateRows(vars, 'variable');
    setLocal(le);
    setRowErrors(errs);
    setError(undefined);
    if (le || errs.some(Boolean)) return;
    setBusy(true);
    try {
      const t = await pipelines.addTrigger(pipeline.id, {
        type: 'cron',
        expression: x,
        timezone: timezone.trim() || undefined,
        branch: branch.trim() || undefined,
        variables: vars.some((r) => !isBlank(r)) ? mapFromRows(vars) : undefined,
      });
      onClose();
      onCreated(t);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog
      title="Add cron trigger"
      wide
      onClose={onClose}
      busy={busy}
      formId="cron-trigger"
      submitLabel="Add trigger"
      busyLabel="Adding…"
      onSubmit={submit}
    >
      <div className="form-row">
        <Field label="Schedule" hint="minute hour day month weekday, or @hourly, @daily, @weekly" error={local ?? fieldError(error, 'expression')}>
          <input type="text" value={expression} onChange={(e) => setExpression(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Time zone" hint="e.g. Europe/Berlin; empty for UTC" error={fieldError(error, 'timezone')}>
          <input type="text" value={timezone} onChange={(e) => setTimezone(e.target.value)} placeholder="UTC" autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Branch" hint="CF_BRANCH of the builds" error={fieldError(error, 'branch')}>
          <input type="text" value={branch} onChange={(e) => setBranch(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
      </div>
      <KeyValueRows label="Variables" rows={vars} onChange={setVars} errors={rowErrors} />
      {error !== undefined && !fieldError(error, 'expression') && !fieldError(error, 'timezone') && <ErrorNote error={error} />}
    </FormDialog>
  );
}
