// Settings → Rules: the account's attribute-based rules (docs/api.md#attribute-based-rules).
// Rules only allow: once a kind has a hand-written rule, members and viewers need one to act on
// it. Rules derived from a runtime's AppProject roles are shown read-only with their origin. The
// explain form asks the server why a user may or may not take an action on a resource.
import { useState, type FormEvent } from 'react';
import { ApiError, fieldError } from '../api/client';
import { ruleActions, ruleKinds, rules as rulesApi, teams as teamsApi, type AuthzExplanation, type Rule } from '../api/governance';
import { useMe } from '../app/session';
import { Badge } from '../components/Badge';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Field, Options } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { ResourceTable, actionsColumn } from '../components/ResourceTable';
import { RowDangerButton } from '../components/RowDangerButton';
import { SettingsNav } from '../components/SettingsNav';
import { ErrorNote, Flash } from '../components/States';
import {
  emptyExplainForm,
  emptyRuleForm,
  explainErrors,
  explainQuery,
  gitopsKinds,
  ruleAttributes,
  ruleErrors,
  ruleRequest,
  taggedKinds,
  type ExplainForm,
  type RuleForm,
} from '../lib/governance';
import { useResource } from '../lib/useResource';
import * as v from '../lib/validate';

export const RULES_ADMIN_ONLY = 'Only admins can create or delete rules.';

export default function Rules() {
  const me = useMe();
  const admin = me.role === 'admin';
  const list = useResource((signal) => rulesApi.list(signal), []);
  const teams = useResource((signal) => teamsApi.list(signal), []);
  const [done, setDone] = useState<string>();
  const [deleting, setDeleting] = useState<Rule>();
  return (
    <div data-page="settings-rules">
      <PageHeader title="Settings" />
      <SettingsNav />
      <section className="panel panel-wide" aria-labelledby="rules-h">
        <h2 id="rules-h">Rules</h2>
        <p className="muted">
          A rule lets a team or a user take an action on resources of a kind that have its attributes. Rules only allow: once a kind has a hand-written rule, members and viewers need one to
          act on it (admins always may). Rules derived from a runtime's AppProject roles are read-only here: change the AppProject instead.
        </p>
        <Flash text={done} onDone={() => setDone(undefined)} />
        <RulesTable list={list} admin={admin} onDelete={setDeleting} />
      </section>
      <CreateRule
        admin={admin}
        teamNames={(teams.data?.items ?? []).map((t) => t.name)}
        onCreated={(r) => {
          setDone(`Created: ${r.summary}.`);
          list.reload();
        }}
      />
      <Explain rules={list.data?.items ?? []} />
      <ConfirmDialog
        open={!!deleting}
        title="Delete rule"
        confirmLabel="Delete rule"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await rulesApi.remove(deleting.id);
          setDone(`Deleted: ${deleting.summary}.`);
          list.reload();
        }}
      >
        Delete the rule <strong>{deleting?.summary}</strong>? What it allowed stops at the next request.
      </ConfirmDialog>
    </div>
  );
}

/** The rules as a table: subject, effect, action and kind, attributes, origin. */
export function RulesTable({ list, admin, onDelete }: { list: Parameters<typeof ResourceTable<Rule>>[0]['list']; admin: boolean; onDelete: (r: Rule) => void }) {
  return (
    <ResourceTable
      list={list}
      placeholder={{ label: 'Loading rules', rows: 3 }}
      empty={{ title: 'No rules', body: 'Without rules, roles alone decide: viewers read, members change, admins administer.' }}
      className="table table-compact"
      rowKey={(r) => r.id}
      rowProps={(r) => ({ 'data-testid': 'rule-row', 'data-rule': r.id, 'data-derived': r.origin ? 'true' : undefined })}
      columns={[
        { header: 'For', cellClassName: 'strong', cell: (r) => (r.team ? <>team {r.team}</> : <>user {r.user}</>) },
        { header: 'Effect', cell: () => <Badge tone="success">allow</Badge> },
        {
          header: 'Action',
          cell: (r) => <code>{r.action}</code>,
        },
        { header: 'Kind', cell: (r) => r.kind },
        {
          header: 'Attributes',
          cell: (r) => {
            const attrs = ruleAttributes(r);
            return attrs.length === 0 ? (
              <span className="muted">any {r.kind}</span>
            ) : (
              <ul className="attr-list">
                {attrs.map((a) => (
                  <li key={a.label}>
                    <span className="muted">{a.label}</span> <code>{a.value}</code>
                  </li>
                ))}
              </ul>
            );
          },
        },
        {
          header: 'Origin',
          cell: (r) =>
            r.origin ? (
              <span>
                <Badge tone="info" title="Derived rules change with their AppProject">
                  derived
                </Badge>{' '}
                <span className="small">{r.origin}</span>
              </span>
            ) : (
              <span className="muted">hand-written</span>
            ),
        },
        actionsColumn((r: Rule) =>
          r.origin ? (
            <span className="muted small">read-only</span>
          ) : admin ? (
            <RowDangerButton label="Delete" ariaLabel={`Delete rule: ${r.summary}`} onClick={() => onDelete(r)} />
          ) : (
            <button type="button" className="button button-small" disabled title={RULES_ADMIN_ONLY} aria-label={`Delete rule: ${r.summary} (${RULES_ADMIN_ONLY})`}>
              Delete
            </button>
          ),
        ),
      ]}
    />
  );
}

function CreateRule({ admin, teamNames, onCreated }: { admin: boolean; teamNames: string[]; onCreated: (r: Rule) => void }) {
  const [f, setF] = useState<RuleForm>(emptyRuleForm);
  const [local, setLocal] = useState<ReturnType<typeof ruleErrors>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const set = (k: keyof RuleForm) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = ruleErrors(f);
    setLocal(errs);
    setError(undefined);
    if (v.hasErrors(errs)) return;
    setBusy(true);
    try {
      onCreated(await rulesApi.create(ruleRequest(f)));
      setF({ ...emptyRuleForm, subject: f.subject, team: f.team });
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  const tagged = taggedKinds.includes(f.kind);
  const gitops = gitopsKinds.includes(f.kind);
  const known = ['team', 'user', 'action', 'kind', 'tags', 'runtime', 'cluster', 'namespace', 'owner'];
  return (
    <section className="panel panel-wide" aria-labelledby="rule-new">
      <h2 id="rule-new">New rule</h2>
      {!admin && <p className="muted">{RULES_ADMIN_ONLY}</p>}
      <form onSubmit={submit} noValidate data-testid="rule-form">
        <fieldset className="plain-fieldset" disabled={!admin}>
          <legend className="visually-hidden">The rule</legend>
          <div className="form-row">
            <Field label="For">
              <select name="subject" value={f.subject} onChange={(e) => setF({ ...f, subject: e.target.value as RuleForm['subject'] })}>
                <option value="team">a team</option>
                <option value="user">a user</option>
              </select>
            </Field>
            {f.subject === 'team' ? (
              <Field label="Team" error={local.team ?? fieldError(error, 'team')} hint={teamNames.length ? undefined : 'No teams yet: create one under Teams.'}>
                <select name="team" value={f.team} onChange={set('team')}>
                  <option value="">Choose a team</option>
                  <Options values={teamNames} />
                </select>
              </Field>
            ) : (
              <Field label="User" error={local.user ?? fieldError(error, 'user')}>
                <input type="email" name="user" value={f.user} onChange={set('user')} autoComplete="off" placeholder="email" />
              </Field>
            )}
            <Field label="May" error={fieldError(error, 'action')}>
              <select name="action" value={f.action} onChange={set('action')}>
                <Options values={ruleActions} />
              </select>
            </Field>
            <Field label="Kind" error={fieldError(error, 'kind')}>
              <select name="kind" value={f.kind} onChange={set('kind')}>
                <Options values={ruleKinds} />
              </select>
            </Field>
          </div>
          <div className="form-row">
            {tagged && (
              <Field label="Tags (optional)" hint="The resource has one of them; comma-separated." error={local.tags ?? fieldError(error, 'tags')}>
                <input type="text" name="tags" value={f.tags} onChange={set('tags')} autoComplete="off" />
              </Field>
            )}
            {gitops && (
              <>
                <Field label="Runtime (optional)" error={local.runtime ?? fieldError(error, 'runtime')}>
                  <input type="text" name="runtime" value={f.runtime} onChange={set('runtime')} autoComplete="off" />
                </Field>
                <Field label="Cluster (optional)" error={fieldError(error, 'cluster')}>
                  <input type="text" name="cluster" value={f.cluster} onChange={set('cluster')} autoComplete="off" />
                </Field>
                <Field label="Namespace (optional)" error={fieldError(error, 'namespace')}>
                  <input type="text" name="namespace" value={f.namespace} onChange={set('namespace')} autoComplete="off" />
                </Field>
              </>
            )}
            {f.kind !== 'contexts' && (
              <Field label="Owner (optional)" hint="The team that must own the resource." error={fieldError(error, 'owner')}>
                <select name="owner" value={f.owner} onChange={set('owner')}>
                  <option value="">any owner</option>
                  {f.subject === 'team' && <option value="own-team">the rule's own team</option>}
                  <Options values={teamNames} />
                </select>
              </Field>
            )}
          </div>
          {error !== undefined && !known.includes((error as ApiError).field ?? '') && <ErrorNote error={error} />}
          <button type="submit" className="button button-primary" disabled={busy || !admin} title={admin ? undefined : RULES_ADMIN_ONLY}>
            {busy ? 'Creating…' : 'Create rule'}
          </button>
        </fieldset>
      </form>
    </section>
  );
}

function Explain({ rules }: { rules: readonly Rule[] }) {
  const [f, setF] = useState<ExplainForm>(emptyExplainForm);
  const [local, setLocal] = useState<ReturnType<typeof explainErrors>>({});
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const [answer, setAnswer] = useState<AuthzExplanation>();
  const set = (k: keyof ExplainForm) => (e: { target: { value: string } }) => setF({ ...f, [k]: e.target.value });
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = explainErrors(f);
    setLocal(errs);
    setError(undefined);
    if (v.hasErrors(errs)) return;
    setBusy(true);
    try {
      setAnswer(await rulesApi.explain(explainQuery(f)));
    } catch (er) {
      setAnswer(undefined);
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  const gitops = gitopsKinds.includes(f.kind) && f.kind !== 'runtimes';
  return (
    <section className="panel panel-wide" aria-labelledby="explain-h">
      <h2 id="explain-h">Explain a decision</h2>
      <p className="muted small">Why may (or may not) a user take an action on a resource? The server answers with each step of its decision.</p>
      <form onSubmit={submit} noValidate data-testid="explain-form">
        <div className="form-row">
          <Field label="User (optional)" hint="Email; empty for you." error={local.user ?? fieldError(error, 'user')}>
            <input type="email" name="explainUser" value={f.user} onChange={set('user')} autoComplete="off" />
          </Field>
          <Field label="Action" error={fieldError(error, 'action')}>
            <select name="explainAction" value={f.action} onChange={set('action')}>
              <Options values={ruleActions} />
            </select>
          </Field>
          <Field label="Kind">
            <select name="explainKind" value={f.kind} onChange={set('kind')}>
              <Options values={ruleKinds} />
            </select>
          </Field>
          <Field label="Name" error={local.name ?? fieldError(error, 'resource')}>
            <input type="text" name="explainName" value={f.name} onChange={set('name')} autoComplete="off" />
          </Field>
        </div>
        {gitops && (
          <div className="form-row">
            <Field label="Runtime (optional)" error={fieldError(error, 'runtime')}>
              <input type="text" name="explainRuntime" value={f.runtime} onChange={set('runtime')} autoComplete="off" />
            </Field>
            <Field label="Cluster (optional)">
              <input type="text" name="explainCluster" value={f.cluster} onChange={set('cluster')} autoComplete="off" />
            </Field>
            <Field label="Namespace (optional)">
              <input type="text" name="explainNamespace" value={f.namespace} onChange={set('namespace')} autoComplete="off" />
            </Field>
          </div>
        )}
        {error !== undefined && !['user', 'action', 'resource', 'runtime'].includes((error as ApiError).field ?? '') && <ErrorNote error={error} />}
        <button type="submit" className="button" disabled={busy}>
          {busy ? 'Asking…' : 'Explain'}
        </button>
      </form>
      {answer && <Explanation answer={answer} rules={rules} />}
    </section>
  );
}

/** The server's answer: allowed or not, the role's part, the rule that decided, each step. */
export function Explanation({ answer: a, rules }: { answer: AuthzExplanation; rules: readonly Rule[] }) {
  const rule = a.rule ? rules.find((r) => r.id === a.rule) : undefined;
  return (
    <div className="explanation" role="status" data-testid="explanation" data-allowed={a.allowed}>
      <p>
        <Badge tone={a.allowed ? 'success' : 'danger'}>{a.allowed ? 'allowed' : 'denied'}</Badge> <strong>{a.user}</strong> may {a.allowed ? '' : 'not '}
        <code>{a.action}</code> <code>{a.resource}</code>
      </p>
      <dl className="props">
        <dt>Role</dt>
        <dd>
          {a.role} {a.permission && <span className="muted">(needs {a.permission}: {a.roleAllows ? 'held' : 'not held'})</span>}
        </dd>
        <dt>Rules govern it</dt>
        <dd>{a.governed ? 'yes' : 'no: the role alone decides'}</dd>
        {a.rule && (
          <>
            <dt>Decided by</dt>
            <dd>
              {rule ? rule.summary : <code>{a.rule}</code>}
              {rule?.origin && <span className="muted"> (derived from {rule.origin})</span>}
            </dd>
          </>
        )}
        {a.owner && (
          <>
            <dt>Owner</dt>
            <dd>team {a.owner}</dd>
          </>
        )}
      </dl>
      {(a.reasons ?? []).length > 0 && (
        <ol className="explain-steps">
          {(a.reasons ?? []).map((r, i) => (
            <li key={i}>{r}</li>
          ))}
        </ol>
      )}
    </div>
  );
}
