// Runs a pipeline by hand: branch, revision and variables, then opens the new build.
import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client';
import { pipelines } from '../api/ci';
import { navigate } from '../app/router';
import { isBlank, mapFromRows, validateRows, type KVRow } from '../lib/kv';
import { FormDialog } from './FormDialog';
import { Field } from './Field';
import { KeyValueRows } from './KeyValueRows';
import { ErrorNote } from './States';

export function RunDialog({ open, pipeline, onClose }: { open: boolean; pipeline: { id: string; fullName: string }; onClose: () => void }) {
  const [branch, setBranch] = useState('main');
  const [sha, setSha] = useState('');
  const [vars, setVars] = useState<KVRow[]>([{ key: '', value: '' }]);
  const [rowErrors, setRowErrors] = useState<(string | undefined)[]>([]);
  const [shaError, setShaError] = useState<string>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const close = () => {
    setError(undefined);
    setRowErrors([]);
    onClose();
  };
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const errs = validateRows(vars, 'variable');
    setRowErrors(errs);
    const s = sha.trim();
    const se = s && !/^[0-9a-fA-F]{4,64}$/.test(s) ? `"${s}" is not a commit SHA: 4 to 64 hex digits.` : undefined;
    setShaError(se);
    if (errs.some(Boolean) || se) return;
    setBusy(true);
    setError(undefined);
    try {
      const b = await pipelines.run(pipeline.id, {
        branch: branch.trim() || undefined,
        sha: s || undefined,
        variables: vars.some((r) => !isBlank(r)) ? mapFromRows(vars) : undefined,
      });
      onClose();
      navigate(`/builds/${b.id}`);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <FormDialog
      open={open}
      title={`Run ${pipeline.fullName}`}
      onClose={close}
      busy={busy}
      wide
      formId="run-form"
      submitLabel="Run"
      busyLabel="Starting…"
      onSubmit={submit}
    >
      <div className="form-row">
        <Field label="Branch" hint="CF_BRANCH; empty for none." error={fieldError(error, 'branch')}>
          <input type="text" name="branch" value={branch} onChange={(e) => setBranch(e.target.value)} autoComplete="off" spellCheck={false} />
        </Field>
        <Field label="Revision" hint="Commit SHA (CF_REVISION); optional." error={shaError ?? fieldError(error, 'sha')}>
          <input type="text" name="sha" value={sha} onChange={(e) => setSha(e.target.value)} autoComplete="off" spellCheck={false} placeholder="e.g. 3f2a9c1" />
        </Field>
      </div>
      <KeyValueRows label="Variables" rows={vars} onChange={setVars} errors={rowErrors} hint="Override pipeline variables for this build. Paste KEY=VALUE lines to fill several rows." />
      {error !== undefined && <ErrorNote error={error} />}
    </FormDialog>
  );
}
