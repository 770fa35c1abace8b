// The team that owns a project or runtime (docs/security.md#team-owned-resources), and for those
// who may change it a dialog to give it to another team or none.
import { useState, type FormEvent } from 'react';
import { teams as teamsApi } from '../api/governance';
import { Link } from '../app/router';
import { useResource } from '../lib/useResource';
import { Field } from './Field';
import { FormDialog } from './FormDialog';
import { ErrorNote } from './States';

export interface OwnerPickerProps {
  /** "runtime edge", "project shop": what the dialog names. */
  what: string;
  owner?: string;
  /** Why the current user cannot change it; undefined when they can. */
  cannot?: string;
  save: (team: string) => Promise<unknown>;
  onSaved: () => void;
}

export function OwnerPicker({ what, owner, cannot, save, onSaved }: OwnerPickerProps) {
  const [open, setOpen] = useState(false);
  return (
    <span className="owner-picker" data-testid="owner">
      {owner ? <Link to="/settings/teams">team {owner}</Link> : <span className="muted">no team</span>}{' '}
      <button type="button" className="link-button small" disabled={!!cannot} title={cannot} aria-label={cannot ? `Change owner (${cannot})` : `Change the owner of ${what}`} onClick={() => setOpen(true)}>
        Change
      </button>
      {open && <OwnerDialog what={what} owner={owner} save={save} onClose={() => setOpen(false)} onSaved={onSaved} />}
    </span>
  );
}

function OwnerDialog({ what, owner, save, onClose, onSaved }: { what: string; owner?: string; save: (team: string) => Promise<unknown>; onClose: () => void; onSaved: () => void }) {
  const teams = useResource((signal) => teamsApi.list(signal), []);
  const [team, setTeam] = useState(owner ?? '');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await save(team);
      onSaved();
      onClose();
    } catch (er) {
      setError(er);
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog title={`Owner of ${what}`} onClose={onClose} busy={busy} formId="owner-form" submitLabel="Save owner" busyLabel="Saving…" submitDisabled={team === (owner ?? '')} onSubmit={submit}>
      <Field label="Team" hint="Rules with owner: own-team let the owning team's members act on it.">
        <select name="ownerTeam" value={team} onChange={(e) => setTeam(e.target.value)}>
          <option value="">No team</option>
          {(teams.data?.items ?? []).map((t) => (
            <option key={t.id} value={t.name}>
              {t.name}
            </option>
          ))}
        </select>
      </Field>
      {teams.error !== undefined && <ErrorNote error={teams.error} />}
      {error !== undefined && <ErrorNote error={error} />}
    </FormDialog>
  );
}
