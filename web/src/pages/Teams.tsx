// Settings → Teams: the account's teams, their members and what each owns (docs/security.md).
// Everyone may read them; admins create and delete teams and change members.
import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { teams as teamsApi, type Team } from '../api/governance';
import { users as usersApi } from '../api/rest';
import type { User } from '../api/types';
import { Link } from '../app/router';
import { useMe } from '../app/session';
import { ConfirmDialog } from '../components/ConfirmDialog';
import { Field } from '../components/Field';
import { PageHeader } from '../components/PageHeader';
import { RowDangerButton } from '../components/RowDangerButton';
import { SettingsNav } from '../components/SettingsNav';
import { EmptyState, ErrorNote, ErrorState, Flash, LoadingRows } from '../components/States';
import { formatTime, plural } from '../lib/format';
import { teamNameError } from '../lib/governance';
import { useResource } from '../lib/useResource';

export const ADMIN_ONLY = 'Only admins can change teams.';

export default function Teams() {
  const me = useMe();
  const admin = me.role === 'admin';
  const list = useResource((signal) => teamsApi.list(signal), []);
  // The account's members, offered when adding one to a team (admins can list them all).
  const members = useResource((signal) => (admin ? usersApi.list({ limit: 500 }, signal).then((p) => p.items) : Promise.resolve([] as User[])), [admin]);
  const [done, setDone] = useState<string>();
  const [deleting, setDeleting] = useState<Team>();
  const [removing, setRemoving] = useState<{ team: Team; email: string; userId: string }>();
  return (
    <div data-page="settings-teams">
      <PageHeader title="Settings" />
      <SettingsNav />
      <section className="panel" aria-labelledby="teams-h">
        <h2 id="teams-h">Teams</h2>
        <p className="muted">
          Teams group members so that <Link to="/settings/rules">rules</Link> can be written for many at once, and own projects and runtimes. {!admin && <span id="teams-admin-only">{ADMIN_ONLY}</span>}
        </p>
        <CreateTeam
          admin={admin}
          onCreated={(t) => {
            setDone(`Created team ${t.name}.`);
            list.reload();
          }}
        />
      </section>
      <Flash text={done} onDone={() => setDone(undefined)} />
      {list.error !== undefined ? (
        <ErrorState error={list.error} onRetry={() => list.reload()} />
      ) : !list.data ? (
        <LoadingRows rows={3} label="Loading teams" />
      ) : list.data.items.length === 0 ? (
        <EmptyState title="No teams yet">{admin ? 'Create one above, then add members.' : 'An admin can create them.'}</EmptyState>
      ) : (
        <div className="team-list">
          {list.data.items.map((t) => (
            <TeamCard
              key={t.id}
              team={t}
              admin={admin}
              users={members.data ?? []}
              onAdded={(email) => {
                setDone(`Added ${email} to ${t.name}.`);
                list.reload();
              }}
              onRemoveMember={(m) => setRemoving({ team: t, email: m.email, userId: m.userId })}
              onDelete={() => setDeleting(t)}
            />
          ))}
        </div>
      )}
      <ConfirmDialog
        open={!!deleting}
        title="Delete team"
        confirmLabel="Delete team"
        danger
        onClose={() => setDeleting(undefined)}
        onConfirm={async () => {
          if (!deleting) return;
          await teamsApi.remove(deleting.id);
          setDone(`Deleted team ${deleting.name}.`);
          list.reload();
        }}
      >
        Delete <strong>{deleting?.name}</strong> and its rules? Its members lose what those rules let them do.
      </ConfirmDialog>
      <ConfirmDialog
        open={!!removing}
        title="Remove member"
        confirmLabel="Remove"
        danger
        onClose={() => setRemoving(undefined)}
        onConfirm={async () => {
          if (!removing) return;
          await teamsApi.removeMember(removing.team.id, removing.userId);
          setDone(`Removed ${removing.email} from ${removing.team.name}.`);
          list.reload();
        }}
      >
        Remove <strong>{removing?.email}</strong> from {removing?.team.name}? They lose what the team's rules let them do.
      </ConfirmDialog>
    </div>
  );
}

function CreateTeam({ admin, onCreated }: { admin: boolean; onCreated: (t: Team) => void }) {
  const [name, setName] = useState('');
  const [local, setLocal] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const err = teamNameError(name);
    setLocal(err);
    setError(undefined);
    if (err) return;
    setBusy(true);
    try {
      onCreated(await teamsApi.create(name.trim()));
      setName('');
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="inline-form" onSubmit={submit} noValidate data-testid="create-team">
      <Field label="New team" error={local ?? fieldError(error, 'name')} hint={admin ? undefined : ADMIN_ONLY}>
        <input type="text" name="teamName" value={name} onChange={(e) => setName(e.target.value)} autoComplete="off" disabled={!admin} />
      </Field>
      <button type="submit" className="button" disabled={busy || !admin} title={admin ? undefined : ADMIN_ONLY}>
        {busy ? 'Creating…' : 'Create team'}
      </button>
      {error !== undefined && !fieldError(error, 'name') && <ErrorNote error={error} />}
    </form>
  );
}

export interface TeamCardProps {
  team: Team;
  admin: boolean;
  /** The account's members, to pick one to add. */
  users: readonly User[];
  onAdded: (email: string) => void;
  onRemoveMember: (m: { email: string; userId: string }) => void;
  onDelete: () => void;
}

/** One team: its members (with add and remove for admins) and what it owns, linked. */
export function TeamCard({ team: t, admin, users, onAdded, onRemoveMember, onDelete }: TeamCardProps) {
  const members = t.members ?? [];
  const projects = t.owns.projects ?? [];
  const runtimes = t.owns.runtimes ?? [];
  const headingId = `team-${t.id}`;
  return (
    <section className="panel team-card" aria-labelledby={headingId} data-testid={`team-${t.name}`}>
      <div className="team-card-head">
        <h3 id={headingId}>{t.name}</h3>
        <span className="muted small">
          {plural(members.length, 'member')} · created {formatTime(t.createdAt)}
        </span>
        {admin && <RowDangerButton label="Delete" ariaLabel={`Delete team ${t.name}`} onClick={onDelete} />}
      </div>
      <h4 className="small-heading">Members</h4>
      {members.length === 0 ? (
        <p className="muted small">No members yet.</p>
      ) : (
        <ul className="plain-list team-members">
          {members.map((m) => (
            <li key={m.userId}>
              <span className="ellipsis">{m.email}</span> <span className="muted small">added {formatTime(m.addedAt)}</span>{' '}
              {admin && <RowDangerButton label="Remove" ariaLabel={`Remove ${m.email} from ${t.name}`} onClick={() => onRemoveMember(m)} />}
            </li>
          ))}
        </ul>
      )}
      {admin && <AddMember team={t} users={users.filter((u) => !members.some((m) => m.userId === u.id))} onAdded={onAdded} />}
      <h4 className="small-heading">Owns</h4>
      {projects.length === 0 && runtimes.length === 0 ? (
        <p className="muted small">Nothing yet. Give a project or runtime to this team from its page, or with `freshet project set-owner`.</p>
      ) : (
        <ul className="plain-list" data-testid="team-owns">
          {projects.map((p) => (
            <li key={`p-${p}`}>
              <span className="muted">project</span> <Link to={`/pipelines?project=${encodeURIComponent(p)}`}>{p}</Link>
            </li>
          ))}
          {runtimes.map((r) => (
            <li key={`r-${r}`}>
              <span className="muted">runtime</span> <Link to={`/runtimes/${encodeURIComponent(r)}`}>{r}</Link>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function AddMember({ team, users, onAdded }: { team: Team; users: readonly User[]; onAdded: (email: string) => void }) {
  const [user, setUser] = useState('');
  const [local, setLocal] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const listId = `team-users-${team.id}`;
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const u = user.trim();
    setLocal(u ? undefined : 'Give the email of a member of this account.');
    setError(undefined);
    if (!u) return;
    setBusy(true);
    try {
      await teamsApi.addMember(team.id, u);
      setUser('');
      onAdded(u);
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form className="inline-form" onSubmit={submit} noValidate aria-label={`Add a member to ${team.name}`}>
      <Field label="Add member" error={local ?? fieldError(error, 'user')}>
        <input type="text" name="memberEmail" list={listId} value={user} onChange={(e) => setUser(e.target.value)} autoComplete="off" placeholder="email" />
      </Field>
      <datalist id={listId}>
        {users.map((u) => (
          <option key={u.id} value={u.email}>
            {u.name}
          </option>
        ))}
      </datalist>
      <button type="submit" className="button" disabled={busy}>
        {busy ? 'Adding…' : 'Add'}
      </button>
      {error !== undefined && !fieldError(error, 'user') && <ErrorNote error={error} />}
    </form>
  );
}
