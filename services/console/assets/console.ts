/**
 * The console's one script. Served as a file (transpiled when the service mounts) so the
 * page's CSP can forbid inline script. The pages work without it: it only reveals the copy
 * buttons and asks for confirmation before a form marked `data-confirm` is sent.
 * Browser-only: it imports nothing.
 */

export {}; // a module, so its names stay out of the project's global scope

const live = () => document.getElementById('live');

function announce(text: string): void {
  const el = live();
  if (!el) return;
  el.textContent = '';
  // A change the screen reader notices even when the same text is announced twice.
  window.setTimeout(() => (el.textContent = text), 50);
}

async function copy(button: HTMLButtonElement): Promise<void> {
  const target = document.getElementById(button.dataset.copy ?? '');
  const text = target?.textContent ?? '';
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
    announce('Copied to the clipboard.');
  } catch {
    // No clipboard (an insecure origin, or refused): select the text for a manual copy.
    const range = document.createRange();
    if (target) range.selectNodeContents(target);
    const sel = window.getSelection();
    sel?.removeAllRanges();
    sel?.addRange(range);
    announce('Selected: press Ctrl+C (or Cmd+C) to copy.');
  }
  window.setTimeout(() => (button.textContent = 'Copy'), 2000);
}

for (const b of document.querySelectorAll<HTMLButtonElement>('button[data-copy]')) {
  b.hidden = false;
  b.addEventListener('click', () => void copy(b));
}

document.addEventListener('submit', (e) => {
  const form = e.target;
  if (!(form instanceof HTMLFormElement)) return;
  const question = form.dataset.confirm;
  if (question && !window.confirm(question)) e.preventDefault();
});
