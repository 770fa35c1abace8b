import { useState, type ReactNode } from 'react';
import { Dialog } from './Dialog';
import { ErrorNote } from './States';

export interface ConfirmDialogProps {
  open: boolean;
  title: string;
  children: ReactNode;
  confirmLabel: string;
  /** The way out, "Cancel" unless that would read like the action ("Cancel build"). */
  cancelLabel?: string;
  danger?: boolean;
  /** Keeps the confirm button off until the user has done what the text asks (typed a name). */
  confirmDisabled?: boolean;
  onConfirm: () => Promise<void>;
  onClose: () => void;
}

/** Asks before doing something that cannot be undone; shows the server's error if it fails. */
export function ConfirmDialog({ open, title, children, confirmLabel, cancelLabel = 'Cancel', danger, confirmDisabled, onConfirm, onClose }: ConfirmDialogProps) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const close = () => {
    setError(undefined);
    onClose();
  };
  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await onConfirm();
      close();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog
      open={open}
      title={title}
      onClose={close}
      busy={busy}
      footer={
        <>
          {/* Focus starts on the safe choice when the action destroys something. */}
          <button type="button" className="button" onClick={close} disabled={busy} data-autofocus={danger ? true : undefined}>
            {cancelLabel}
          </button>
          <button type="button" className={danger ? 'button button-danger' : 'button button-primary'} onClick={confirm} disabled={busy || confirmDisabled} data-autofocus={danger ? undefined : true}>
            {busy ? 'Working…' : confirmLabel}
          </button>
        </>
      }
    >
      <div className="confirm-text">{children}</div>
      {error !== undefined && <ErrorNote error={error} />}
    </Dialog>
  );
}
