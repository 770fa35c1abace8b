// Putting text on the clipboard, also where the Clipboard API is not allowed (plain http).

/** Copies text, through the Clipboard API where the page may use it (secure contexts). */
export async function copyText(text: string): Promise<boolean> {
  try {
    if (navigator.clipboard?.writeText) await navigator.clipboard.writeText(text);
    else legacyCopy(text);
    return true;
  } catch {
    try {
      legacyCopy(text);
      return true;
    } catch {
      return false;
    }
  }
}

function legacyCopy(text: string) {
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.style.position = 'fixed';
  ta.style.opacity = '0';
  document.body.appendChild(ta);
  ta.select();
  const ok = document.execCommand('copy');
  ta.remove();
  if (!ok) throw new Error('copy refused');
}
