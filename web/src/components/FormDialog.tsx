// A dialog that holds one form: Cancel and the submit button in its footer, the fields in its body.
import type { FormEvent, ReactNode } from 'react';
import { Dialog } from './Dialog';

export interface FormDialogProps {
  open?: boolean;
  title: string;
  wide?: boolean;
  onClose: () => void;
  /** While the submit runs: the buttons are disabled and the submit button says busyLabel. */
  busy: boolean;
  /** The form's id, which the footer's submit button points at. */
  formId: string;
  submitLabel: string;
  busyLabel: string;
  /** Disables the submit button besides while busy (e.g. nothing changed yet). */
  submitDisabled?: boolean;
  onSubmit: (e: FormEvent<HTMLFormElement>) => void;
  /** Let the browser's own constraint validation run; by default the form validates itself. */
  validate?: boolean;
  children: ReactNode;
}

export function FormDialog({ open = true, title, wide, onClose, busy, formId, submitLabel, busyLabel, submitDisabled, onSubmit, validate, children }: FormDialogProps) {
  return (
    <Dialog
      open={open}
      title={title}
      wide={wide}
      onClose={onClose}
      busy={busy}
      footer={
        <>
          <button type="button" className="button" onClick={onClose} disabled={busy}>
            Cancel
          </button>
          <button type="submit" form={formId} className="button button-primary" disabled={busy || submitDisabled}>
            {busy ? busyLabel : submitLabel}
          </button>
        </>
      }
    >
      <form id={formId} onSubmit={onSubmit} noValidate={!validate}>
        {children}
      </form>
    </Dialog>
  );
}
