/**
 * The hosted portal's self-service, in the browser. Served as a file (transpiled when the
 * service mounts) so the page's CSP can forbid inline script. It reads the principal token
 * from the URL fragment (`#token=…`, never sent to any server), keeps it in sessionStorage for
 * reloads of this tab, removes it from the address bar, and sends it as
 * `Authorization: Portal …` to the portal API. Every text it shows is set as text, never
 * parsed as HTML. Browser-only: it imports nothing.
 */

export {}; // a module, so its names stay out of the project's global scope

type RecordState = 'granted' | 'denied' | 'revoked' | 'expired' | 'erased';
type Op = 'grant' | 'revoke' | 'erase';

interface Txn {
  transactionId: string;
  processId: string | null;
  status: string;
  createdAt: string;
  expiresAt: string;
  records: { recordId: string; purpose: string; state: RecordState; updatedAt: string }[];
}

class ApiError extends Error {
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/**
 * The page's UI strings, in the page's language: the server puts them in `data-i18n` on
 * `<main>` (shared/i18n, portal set). `{name}` placeholders are filled by `tr`.
 */
let T: Record<string, string> = {};

/** `text` with each `{name}` replaced by `vars[name]`; unknown placeholders stay. */
const fill = (text: string, vars: Record<string, string>) =>
  text.replace(/\{(\w+)\}/g, (whole, name: string) =>
    Object.hasOwn(vars, name) ? vars[name]! : whole,
  );

/** The string `key` with its placeholders filled; `fallback` (else the key) when it has none. */
function tr(key: string, vars: Record<string, string> = {}, fallback = key): string {
  return fill(Object.hasOwn(T, key) ? T[key]! : fallback, vars);
}

/** A transaction status: its own word for active and partly withdrawn, else a record state's. */
const statusText = (status: string) =>
  tr(
    status === 'active' || status === 'partially_revoked' ? `t_${status}` : `s_${status}`,
    {},
    status,
  );

function el(
  tag: string,
  attrs: Record<string, string> = {},
  children: (Node | string)[] = [],
): HTMLElement {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  node.append(...children);
  return node;
}

function when(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString(`${document.documentElement.lang}-IN`);
}

/** Which operations make sense now (mirrors the server's rules; the server still decides). */
function recordOps(state: RecordState): Op[] {
  const ops: Op[] = [];
  if (state === 'denied' || state === 'revoked') ops.push('grant');
  if (state === 'granted') ops.push('revoke');
  if (state !== 'erased') ops.push('erase');
  return ops;
}

function transactionOps(t: Txn): Op[] {
  const states = t.records.map((r) => r.state);
  const ops: Op[] = [];
  // Granting a whole transaction is all-or-nothing, and erased or expired records refuse it.
  const blocked = states.some((s) => s === 'erased' || s === 'expired');
  if (!blocked && states.some((s) => s === 'denied' || s === 'revoked')) ops.push('grant');
  if (states.includes('granted')) ops.push('revoke');
  if (states.some((s) => s !== 'erased')) ops.push('erase');
  return ops;
}

/**
 * The token of this page: from the fragment of the link as mailed (then kept for reloads of
 * this tab and taken out of the address bar, history and bookmarks), else from a reload.
 */
function takeToken(referenceId: string): string {
  const key = `svc-portal-token:${referenceId}`;
  const fromLink = new URLSearchParams(window.location.hash.slice(1)).get('token');
  const store = (() => {
    try {
      return window.sessionStorage;
    } catch {
      return undefined;
    }
  })();
  if (fromLink) {
    try {
      store?.setItem(key, fromLink);
    } catch {
      /* storage full or denied: this view still works */
    }
    history.replaceState(null, '', window.location.pathname + window.location.search);
    return fromLink;
  }
  return store?.getItem(key) ?? '';
}

interface Session {
  referenceId: string;
  expiresAt: string;
  app: { name: string; contactEmail: string };
}

/** The app's name above the title, and whom to contact (DPDP: the notice names its contact). */
function showApp(s: Session): void {
  const name = document.getElementById('app-name');
  if (name) name.textContent = s.app.name;
  document.title = tr('titleApp', { app: s.app.name });
  const intro = document.getElementById('intro');
  if (intro) intro.textContent = tr('introApp', { app: s.app.name });
  const footer = document.getElementById('contact');
  if (footer) {
    // The contact sentence with the address as a mailto: link where {email} stands.
    const [before = '', after = ''] = tr('contact')
      .split('{email}')
      .map((part) => fill(part, { app: s.app.name }));
    footer.replaceChildren(
      el('p', {}, [
        before,
        el('a', { href: `mailto:${s.app.contactEmail}` }, [s.app.contactEmail]),
        after,
      ]),
    );
  }
}

function start(main: HTMLElement, list: HTMLElement, status: HTMLElement): void {
  try {
    T = JSON.parse(main.dataset.i18n ?? '{}') as Record<string, string>;
  } catch {
    T = {};
  }
  const api = main.dataset.api ?? '';
  const token = takeToken(main.dataset.referenceId ?? '');

  const say = (text: string, isError = false) => {
    status.textContent = text;
    status.className = isError ? 'status error' : 'status';
  };

  /** A refused token ends the session: the page says why instead of offering buttons. */
  const fatal = (e: ApiError) => {
    const text = e.status === 401 ? tr('expired') : tr('wrongLink');
    list.replaceChildren(el('p', { class: 'error', role: 'alert' }, [text]));
  };

  async function call<T>(method: 'GET' | 'POST', path: string): Promise<T> {
    const r = await fetch(`${api}${path}`, {
      method,
      headers: { authorization: `Portal ${token}`, accept: 'application/json' },
      credentials: 'omit',
      cache: 'no-store',
    });
    const body = (await r.json().catch(() => null)) as { detail?: string } | null;
    if (!r.ok)
      throw new ApiError(
        body?.detail ?? tr('requestFailed', { status: String(r.status) }),
        r.status,
      );
    return body as T;
  }

  const failed = (err: unknown) => {
    const e = err instanceof ApiError ? err : new ApiError(tr('networkFailed'), 0);
    if (e.status === 401 || e.status === 403) fatal(e);
    say(e.message, true);
  };

  function button(op: Op, text: string, label: string, onClick: () => void): HTMLElement {
    const b = el('button', { type: 'button', class: `op op-${op}`, 'aria-label': label }, [text]);
    b.addEventListener('click', onClick);
    return b;
  }

  async function act(section: HTMLElement, path: string, op: Op, what: string): Promise<void> {
    if (op === 'erase' && !window.confirm(tr('confirmErase', { what }))) return;
    const buttons = Array.from(section.querySelectorAll('button'));
    for (const b of buttons) b.disabled = true;
    section.setAttribute('aria-busy', 'true');
    try {
      const next = render(await call<Txn>('POST', path));
      section.replaceWith(next);
      // Focus goes to the re-rendered heading, so keyboard users keep their place.
      next.querySelector('h2')?.focus();
      say(tr(`done_${op}`, { what }));
    } catch (err) {
      section.removeAttribute('aria-busy');
      for (const b of buttons) b.disabled = false;
      failed(err);
    }
  }

  /** Saves the transaction's signed receipt as a JSON file (docs/receipts.md). */
  async function saveReceipt(b: HTMLButtonElement, t: Txn): Promise<void> {
    b.disabled = true;
    try {
      const receipt = await call<unknown>('GET', `/transactions/${t.transactionId}/receipt`);
      const url = URL.createObjectURL(
        new Blob([JSON.stringify(receipt, null, 2)], { type: 'application/json' }),
      );
      const a = el('a', { href: url, download: `consent-receipt-${t.transactionId}.json` });
      a.hidden = true;
      document.body.append(a);
      a.click();
      a.remove();
      // Revoked later, not at once: the download may still be reading it.
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      say(tr('receiptSaved'));
    } catch (err) {
      failed(err);
    } finally {
      b.disabled = false;
    }
  }

  function render(t: Txn): HTMLElement {
    const headingId = `txn-${t.transactionId}`;
    const title = t.processId ? t.processId.replace(/_/g, ' ') : tr('consent');
    const section = el('section', {
      class: 'txn',
      'aria-labelledby': headingId,
      'data-transaction-id': t.transactionId,
    });
    section.append(
      el('h2', { id: headingId, tabindex: '-1' }, [
        `${title} `,
        el('span', { class: `badge badge-${t.status}`, 'data-status': t.status }, [
          statusText(t.status),
        ]),
      ]),
      el('p', { class: 'meta' }, [
        tr('meta', { created: when(t.createdAt), expires: when(t.expiresAt) }),
      ]),
    );
    const rows = t.records.map((r) => {
      const actions = el('td', { class: 'actions' });
      for (const op of recordOps(r.state))
        actions.append(
          button(op, tr(op), tr('opFor', { verb: tr(op), purpose: r.purpose }), () => {
            void act(section, `/records/${r.recordId}/${op}`, op, r.purpose);
          }),
        );
      return el('tr', { 'data-record-id': r.recordId, 'data-state': r.state }, [
        el('th', { scope: 'row' }, [r.purpose]),
        el('td', { class: 'state' }, [tr(`s_${r.state}`, {}, r.state)]),
        el('td', {}, [when(r.updatedAt)]),
        actions,
      ]);
    });
    const head = ['colPurpose', 'colChoice', 'colChanged', 'colChange']
      .map((k) => tr(k))
      .map((h) => el('th', { scope: 'col' }, [h]));
    section.append(
      el('table', {}, [
        el('caption', {}, [tr('caption')]),
        el('thead', {}, [el('tr', {}, head)]),
        el('tbody', {}, rows),
      ]),
    );
    // The visible text is the whole name (WCAG 2.5.3, label in name): it says whose receipt.
    const download = el(
      'button',
      { type: 'button', class: 'receipt', 'data-receipt': t.transactionId },
      [tr('receiptFor', { title })],
    ) as HTMLButtonElement;
    download.addEventListener('click', () => void saveReceipt(download, t));
    const ops = transactionOps(t);
    if (ops.length > 0) {
      const what = tr('allOf', { title });
      const all = el('div', {
        class: 'all',
        role: 'group',
        'aria-label': tr('groupAll', { title }),
      });
      for (const op of ops)
        all.append(
          button(op, tr(`${op}All`), tr('opAll', { verb: tr(`${op}All`), title }), () => {
            void act(section, `/transactions/${t.transactionId}/${op}`, op, what);
          }),
        );
      section.append(all);
    }
    section.append(el('p', { class: 'receipt-row' }, [download]));
    return section;
  }

  async function load(cursor?: string): Promise<void> {
    try {
      const q = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
      const page = await call<{ items: Txn[]; nextCursor: string | null }>(
        'GET',
        `/transactions?limit=20${q}`,
      );
      if (!cursor) list.replaceChildren();
      list.querySelector('.more')?.remove();
      if (!cursor && page.items.length === 0) list.append(el('p', {}, [tr('empty')]));
      for (const t of page.items) list.append(render(t));
      const nextCursor = page.nextCursor;
      if (nextCursor) {
        const more = el('button', { type: 'button', class: 'more' }, [tr('more')]);
        more.addEventListener('click', () => void load(nextCursor));
        list.append(more);
      }
    } catch (err) {
      failed(err);
    } finally {
      list.setAttribute('aria-busy', 'false');
    }
  }

  if (!token) {
    list.setAttribute('aria-busy', 'false');
    list.replaceChildren(el('p', { class: 'error', role: 'alert' }, [tr('incomplete')]));
    return;
  }
  call<Session>('GET', '/session').then(
    (s) => {
      showApp(s);
      void load();
    },
    (err: unknown) => {
      list.setAttribute('aria-busy', 'false');
      failed(err);
    },
  );
}

const main = document.getElementById('main');
const list = document.getElementById('transactions');
const status = document.getElementById('status');
if (main && list && status) start(main, list, status);
