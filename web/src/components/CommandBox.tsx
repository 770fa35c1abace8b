import { CopyButton } from './CopyButton';

/** A command (or token, or URL) to copy: selectable as a whole, with its Copy button. */
export function CommandBox({ text, label = 'Copy command', testId }: { text: string; label?: string; testId?: string }) {
  return (
    <div className="secret-box">
      <code data-testid={testId}>{text}</code>
      <CopyButton text={text} label={label} />
    </div>
  );
}
