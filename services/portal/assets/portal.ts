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

const STATE: Record<RecordState, string> = {
  granted: 'Given',
  denied: 'Not given',
  revoked: 'Withdrawn',
  expired: 'Expired',
  erased: 'Erased',
};
const TXN_STATUS: Record<string, string> = {
  active: 'Active',
  partially_revoked: 'Partly withdrawn',
  revoked: 'Withdrawn',
  erased: 'Erased',
  expired: 'Expired',
};
const VERB: Record<Op, string> = { grant: 'Give consent', revoke: 'Withdraw', erase: 'Erase' };
const VERB_ALL: Record<Op, string> = {
  grant: 'Give all',
  revoke: 'Withdraw all',
  erase: 'Erase all',
};
const DONE: Record<Op, string> = { grant: 'given', revoke: 'withdrawn', erase: 'erased' };

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
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
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
    history.replaceState(null, '', window.location.pathname);
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
  document.title = `Manage your consent – ${s.app.name}`;
  const intro = document.getElementById('intro');
  if (intro)
    intro.textContent = `These are the consents you gave to ${s.app.name}. You can give, withdraw or erase each of them, for every purpose at once or one purpose at a time. Withdrawing is as easy as giving.`;
  const footer = document.getElementById('contact');
  if (footer)
    footer.replaceChildren(
      el('p', {}, [
        `Questions about your data, or a grievance? Contact ${s.app.name} at `,
        el('a', { href: `mailto:${s.app.contactEmail}` }, [s.app.contactEmail]),
        '. If your grievance is not resolved, you may complain to the Data Protection Board of India.',
      ]),
    );
}

function start(main: HTMLElement, list: HTMLElement, status: HTMLElement): void {
  const api = main.dataset.api ?? '';
  const token = takeToken(main.dataset.referenceId ?? '');

  const say = (text: string, isError = false) => {
    status.textContent = text;
    status.className = isError ? 'status error' : 'status';
  };

  /** A refused token ends the session: the page says why instead of offering buttons. */
  const fatal = (e: ApiError) => {
    const text =
      e.status === 401
        ? 'This link has expired or is no longer valid. Use the link in a more recent e-mail, or ask for a new one.'
        : 'This link is not valid for this page.';
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
    if (!r.ok) throw new ApiError(body?.detail ?? `The request failed (${r.status})`, r.status);
    return body as T;
  }

  const failed = (err: unknown) => {
    const e = err instanceof ApiError ? err : new ApiError('The request failed', 0);
    if (e.status === 401 || e.status === 403) fatal(e);
    say(e.message, true);
  };

  function button(op: Op, text: string, label: string, onClick: () => void): HTMLElement {
    const b = el('button', { type: 'button', class: `op op-${op}`, 'aria-label': label }, [text]);
    b.addEventListener('click', onClick);
    return b;
  }

  async function act(section: HTMLElement, path: string, op: Op, what: string): Promise<void> {
    if (
      op === 'erase' &&
      !window.confirm(
        `Erase ${what}? The organisation will be told to delete this data. This cannot be undone.`,
      )
    )
      return;
    const buttons = Array.from(section.querySelectorAll('button'));
    for (const b of buttons) b.disabled = true;
    section.setAttribute('aria-busy', 'true');
    try {
      const next = render(await call<Txn>('POST', path));
      section.replaceWith(next);
      // Focus goes to the re-rendered heading, so keyboard users keep their place.
      next.querySelector('h2')?.focus();
      say(`Consent for ${what} ${DONE[op]}.`);
    } catch (err) {
      section.removeAttribute('aria-busy');
      for (const b of buttons) b.disabled = false;
      failed(err);
    }
  }

  function render(t: Txn): HTMLElement {
    const headingId = `txn-${t.transactionId}`;
    const title = t.processId ? t.processId.replace(/_/g, ' ') : 'Consent';
    const section = el('section', {
      class: 'txn',
      'aria-labelledby': headingId,
      'data-transaction-id': t.transactionId,
    });
    section.append(
      el('h2', { id: headingId, tabindex: '-1' }, [
        `${title} `,
        el('span', { class: `badge badge-${t.status}`, 'data-status': t.status }, [
          TXN_STATUS[t.status] ?? t.status,
        ]),
      ]),
      el('p', { class: 'meta' }, [
        `Given on ${when(t.createdAt)}. Valid until ${when(t.expiresAt)}.`,
      ]),
    );
    const rows = t.records.map((r) => {
      const actions = el('td', { class: 'actions' });
      for (const op of recordOps(r.state))
        actions.append(
          button(op, VERB[op], `${VERB[op]} for ${r.purpose}`, () => {
            void act(section, `/records/${r.recordId}/${op}`, op, r.purpose);
          }),
        );
      return el('tr', { 'data-record-id': r.recordId, 'data-state': r.state }, [
        el('th', { scope: 'row' }, [r.purpose]),
        el('td', { class: 'state' }, [STATE[r.state] ?? r.state]),
        el('td', {}, [when(r.updatedAt)]),
        actions,
      ]);
    });
    const head = ['Purpose', 'Your choice', 'Last changed', 'Change'].map((h) =>
      el('th', { scope: 'col' }, [h]),
    );
    section.append(
      el('table', {}, [
        el('caption', {}, ['Purposes']),
        el('thead', {}, [el('tr', {}, head)]),
        el('tbody', {}, rows),
      ]),
    );
    const ops = transactionOps(t);
    if (ops.length > 0) {
      const what = `all purposes of ${title}`;
      const all = el('div', {
        class: 'all',
        role: 'group',
        'aria-label': `All purposes of ${title}`,
      });
      for (const op of ops)
        all.append(
          button(op, VERB_ALL[op], `${VERB_ALL[op]} purposes of ${title}`, () => {
            void act(section, `/transactions/${t.transactionId}/${op}`, op, what);
          }),
        );
      section.append(all);
    }
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
      if (!cursor && page.items.length === 0)
        list.append(el('p', {}, ['No consent is recorded for this reference.']));
      for (const t of page.items) list.append(render(t));
      const nextCursor = page.nextCursor;
      if (nextCursor) {
        const more = el('button', { type: 'button', class: 'more' }, ['Show older consents']);
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
    list.replaceChildren(
      el('p', { class: 'error', role: 'alert' }, [
        'This link is incomplete. Open the “Manage consent” link from your e-mail exactly as it was sent.',
      ]),
    );
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
