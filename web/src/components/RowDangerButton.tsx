/** The quiet red button at the end of a table row that starts a delete, revoke or remove. */
export function RowDangerButton({ label, ariaLabel, onClick }: { label: string; ariaLabel: string; onClick: () => void }) {
  return (
    <button type="button" className="button button-small button-danger-quiet" onClick={onClick} aria-label={ariaLabel}>
      {label}
    </button>
  );
}
