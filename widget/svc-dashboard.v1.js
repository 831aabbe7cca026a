// @ts-check
/*! svc-dashboard.v1.js: the embeddable consent dashboard (docs/widget.md).
 * ES2019, no dependencies.
 * Loaded on demand by svc-consent.v1.js for
 *   <div id="consent-detail-root" data-reference-id="SVC-REF-…" data-token="svc_pt_…">,
 * or used directly:
 *   SvcDashboard.mount(element, { baseUrl, referenceId, auth: { siteKey, token } | { portalToken },
 *                                 lang?, labels?, onChange?(transaction, op, recordId?) })
 *   -> { refresh(): Promise, unmount() }
 * With { siteKey, token } it calls the public API (/api/public/consents, X-Site-Key from an
 * allowlisted origin, Authorization: Bearer <principal token minted by the app's server>);
 * with { portalToken } the hosted portal's API (/portal/api/{referenceId}, Authorization: Portal).
 * Auto-mount: <script src=".../svc-dashboard.v1.js" data-reference-id
 * data-portal-token | data-site-key + data-token [data-target="element id"]> mounts into
 * #consent-detail-root (or the target) once the DOM is ready. */
((w, d) => {
  'use strict';
  if (w.SvcDashboard) return;
  const safe = (f, x) => {
    try {
      return f();
    } catch {
      return x;
    }
  };
  // Lookups by own property only: a language named `valueOf` or `__proto__` is just unknown.
  const own = (o, k) => (Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined);

  const STR = {
    en: {
      title: 'Your consent history',
      ref: 'Reference ID',
      loading: 'Loading your consents…',
      empty: 'No consent records yet.',
      notice: 'Notice',
      status: 'Status',
      given: 'Given on',
      validUntil: 'Valid until',
      source: 'Given via',
      purposes: 'Purposes',
      purpose: 'Purpose',
      state: 'State',
      updated: 'Last changed',
      actions: 'Actions',
      grant: 'Grant',
      revoke: 'Revoke',
      erase: 'Erase',
      grantAll: 'Grant all',
      revokeAll: 'Revoke all',
      eraseAll: 'Erase all',
      confirmErase: 'Erase this data permanently? This cannot be undone.',
      confirm: 'Yes, erase',
      cancel: 'Cancel',
      more: 'Show more',
      retry: 'Try again',
      failed: 'That did not work. Please try again.',
      loadFailed: 'Your consents could not be loaded.',
      noRef: 'No reference ID was given, so there is nothing to show.',
      done_grant: 'Consent granted.',
      done_revoke: 'Consent revoked.',
      done_erase: 'Data erased.',
      s_granted: 'Granted',
      s_denied: 'Not given',
      s_revoked: 'Revoked',
      s_expired: 'Expired',
      s_erased: 'Erased',
      s_active: 'Active',
      s_partially_revoked: 'Partly revoked',
      src_widget: 'website',
      src_api: 'app',
      src_portal: 'consent portal',
      receipt: 'Download receipt',
    },
  };
  /* English is the fallback; another of the 23 languages is fetched from
     GET {baseUrl}/api/v1/widget/strings/{lang} (cached by the browser) before the first render. */
  const LANGS = 'en as bn brx doi gu hi kn ks kok mai ml mni mr ne or pa sa sat sd ta te ur'.split(
    ' ',
  );
  const RTL = { ks: 1, sd: 1, ur: 1 };

  const CSS =
    ':host{all:initial!important;display:block!important}' +
    '.w{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans Devanagari",sans-serif;color:#1c1c1c;text-align:start}' +
    '*{box-sizing:border-box}h2{margin:0 0 .25rem;font-size:1.3rem}h3{margin:0;font-size:1.05rem}h2:focus,h3:focus{outline:none}' +
    '.ref{margin:0 0 1rem;color:#4a5360}code{font:inherit;font-weight:600}' +
    'ul.l{list-style:none;margin:0;padding:0}ul.l>li{margin:0 0 1rem;padding:1rem;border:1px solid #d5dae1;border-radius:10px;background:#fff}' +
    'dl{display:flex;flex-wrap:wrap;gap:.25rem 1.5rem;margin:.5rem 0;font-size:.9rem}dt{color:#4a5360}dd{margin:0;font-weight:600}dl div{display:flex;gap:.4rem}' +
    '.tw{overflow-x:auto}table{width:100%;border-collapse:collapse;margin:.5rem 0;font-size:.9rem}' +
    'th,td{padding:.45rem .5rem;border-top:1px solid #e3e6ea;text-align:start;vertical-align:middle}thead th{border-top:0;color:#4a5360;font-weight:600}' +
    '.bd{display:inline-block;padding:.05rem .5rem;border-radius:999px;font-size:.8rem;font-weight:600;background:#e8eaee;color:#333}' +
    '.s-granted,.s-active{background:#dcf3e3;color:#11612d}.s-revoked,.s-partially_revoked{background:#fdebd3;color:#7a4100}' +
    '.s-erased{background:#f9dcdc;color:#8a1111}.s-expired,.s-denied{background:#e8eaee;color:#3b4350}' +
    '.ac{display:flex;flex-wrap:wrap;gap:.4rem}' +
    'button{font:inherit;font-size:.875rem;min-height:2.25rem;padding:.3rem .8rem;border:2px solid #1a4fd6;border-radius:7px;background:#fff;color:#1a4fd6;font-weight:600;cursor:pointer}' +
    'button.dg{border-color:#b00020;color:#b00020}button.dg.f{background:#b00020;color:#fff}' +
    'button[disabled]{opacity:.55;cursor:progress}' +
    '.cf{display:flex;flex-wrap:wrap;align-items:center;gap:.5rem;padding:.5rem .75rem;border-radius:8px;background:#fff4f4;border:1px solid #f0c2c2}.cf p{margin:0;flex:1 1 14rem}' +
    '.msg{min-height:1.5em;margin:.25rem 0 .75rem}.er{color:#b00020;font-weight:600}' +
    '.gv{margin-top:1.5rem}h4{margin:0;font-size:1rem}.gf{display:grid;gap:.35rem;max-width:36rem}' +
    'input,textarea{font:inherit;padding:.4rem .5rem;border:1px solid #8a94a3;border-radius:6px}' +
    '.gf button{justify-self:start}.s-g_open{background:#fdebd3;color:#7a4100}.s-g_answered{background:#dcf3e3;color:#11612d}' +
    '.sr{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap}' +
    ':focus-visible{outline:3px solid #e35d00;outline-offset:2px}';

  const h = (tag, a, kids) => {
    const el = d.createElement(tag);
    for (const k in a) {
      const v = a[k];
      if (v == null || v === false) continue;
      if (k === 'text') el.textContent = v;
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
      else if (k === 'disabled') el.disabled = v;
      else el.setAttribute(k, v === true ? '' : v);
    }
    for (const c of kids || []) if (c != null && c !== false) el.append(c);
    return el;
  };

  /** Clears the widget's consent state on this page, so the notice's triggers gate again. */
  const forgetLocal = (siteKey, tx) => {
    if (w.SvcConsent && w.SvcConsent.siteKey === siteKey)
      return w.SvcConsent.forget(tx.processId, tx.transactionId);
    // A capture on a page with data-region is kept under svc_<siteKey>_<processId>.<region>.
    const base = `svc_${siteKey}_${tx.processId}`;
    for (const k of tx.region ? [base, `${base}.${tx.region}`] : [base]) {
      const s = safe(() => JSON.parse(w.localStorage.getItem(k)), null);
      if (!s || s.consentId !== tx.transactionId) continue;
      safe(() => w.localStorage.removeItem(k));
      d.cookie = `${k}=; max-age=0; path=/`;
    }
  };

  function mount(el, o) {
    if (!el || !o || !o.baseUrl)
      throw new TypeError('SvcDashboard.mount(element, { baseUrl, referenceId, auth })');
    const base = String(o.baseUrl).replace(/\/$/, '');
    const ref = o.referenceId || '';
    const auth = o.auth || {};
    let lang = LANGS.indexOf(o.lang) < 0 ? 'en' : o.lang;
    const S = Object.assign({}, STR.en, o.strings);
    // Nothing is drawn until the strings are there (or failed: then it is all English).
    let ready = lang === 'en';
    if (!ready)
      void fetch(`${base}/api/v1/widget/strings/${lang}`, { credentials: 'omit' })
        .then((r) => (r.ok ? r.json() : null))
        .then((j) => j && j.dashboard)
        .catch(() => null)
        .then((t) => {
          if (t) Object.assign(S, t, o.strings);
          else lang = 'en';
          ready = true;
          render();
        });
    const fmt = safe(
      () => new Intl.DateTimeFormat(`${lang}-IN`, { dateStyle: 'medium', timeStyle: 'short' }),
      null,
    );
    const date = (iso) => h('time', { datetime: iso, text: fmt ? fmt.format(new Date(iso)) : iso });
    const headers = auth.portalToken
      ? { Authorization: `Portal ${auth.portalToken}` }
      : Object.assign(
          { 'X-Site-Key': auth.siteKey || '' },
          auth.token ? { Authorization: `Bearer ${auth.token}` } : {},
        );
    const enc = encodeURIComponent;
    const paths = auth.portalToken
      ? {
          list: (c) =>
            `/portal/api/${enc(ref)}/transactions?limit=20${c ? `&cursor=${enc(c)}` : ''}`,
          tx: (id, op) => `/portal/api/${enc(ref)}/transactions/${enc(id)}/${op}`,
          rec: (id, op) => `/portal/api/${enc(ref)}/records/${enc(id)}/${op}`,
          receipt: (id) => `/portal/api/${enc(ref)}/transactions/${enc(id)}/receipt`,
        }
      : {
          list: (c) =>
            `/api/public/consents/my-transactions?referenceId=${enc(ref)}&limit=20${c ? `&cursor=${enc(c)}` : ''}`,
          tx: (id, op) => `/api/public/consents/my-transactions/${enc(id)}/${op}`,
          rec: (id, op) => `/api/public/consents/my-transactions/records/${enc(id)}/${op}`,
          receipt: (id) => `/api/public/consents/my-transactions/${enc(id)}/receipt`,
        };
    const gPath = auth.portalToken
      ? `/portal/api/${enc(ref)}/grievances`
      : '/api/public/consents/my-grievances';
    const call = (method, path, body) =>
      fetch(base + path, {
        method,
        headers: Object.assign(
          { Accept: 'application/json' },
          headers,
          body ? { 'Content-Type': 'application/json' } : {},
        ),
        body: body ? JSON.stringify(body) : undefined,
        mode: 'cors',
        credentials: 'omit',
        cache: 'no-store',
      }).then((r) =>
        r
          .json()
          .catch(() => ({}))
          .then((j) => {
            if (r.ok) return j;
            throw Object.assign(new Error(j.detail || `HTTP ${r.status}`), { status: r.status });
          }),
      );

    const host = d.createElement('svc-dashboard-ui');
    const root = host.attachShadow({ mode: 'open' });
    if (
      !safe(() => {
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
        root.adoptedStyleSheets = [sheet];
        return true;
      }, false)
    )
      root.append(h('style', { text: CSS }));
    el.append(host);

    const st = {
      items: [],
      next: null,
      loading: true,
      loadError: false,
      busy: null, // key of the action under way
      confirm: null, // key of the erase awaiting confirmation
      msg: '',
      err: false,
      labels: Object.assign({}, o.labels),
      focus: null, // key to focus after the next render
    };
    let alive = true;

    // Purpose labels: the notice's own words when the widget config can be read (site key).
    const labelsOf = {};
    const fetchLabels = (pid) => {
      if (!pid || !auth.siteKey || labelsOf[pid]) return;
      labelsOf[pid] = call('GET', `/api/v1/widget/config/${enc(pid)}?lang=${lang}`).then(
        (c) => {
          for (const p of c.purposes) st.labels[`${pid}:${p.name}`] = p.label;
          render();
        },
        () => {},
      );
    };
    const label = (tx, name) => st.labels[`${tx.processId}:${name}`] || st.labels[name] || name;

    const load = (cursor) => {
      st.loading = true;
      st.loadError = false;
      render();
      return call('GET', paths.list(cursor)).then(
        (page) => {
          st.items = cursor ? st.items.concat(page.items) : page.items;
          st.next = page.nextCursor;
          st.loading = false;
          for (const tx of page.items) fetchLabels(tx.processId);
          render();
        },
        () => {
          st.loading = false;
          st.loadError = true;
          render();
        },
      );
    };

    /** An action that did not work: say so, and free the buttons. */
    const failed = (e) => {
      st.busy = null;
      st.msg = `${S.failed}${e.message ? ` (${e.message})` : ''}`;
      st.err = true;
      render();
    };

    const act = (key, path, op, recordId) => {
      if (st.busy) return;
      st.busy = key;
      st.confirm = null;
      st.msg = '';
      st.focus = key;
      render();
      call('POST', path, auth.portalToken ? undefined : { referenceId: ref }).then((tx) => {
        st.items = st.items.map((t) => (t.transactionId === tx.transactionId ? tx : t));
        st.busy = null;
        st.msg = S[`done_${op}`];
        st.err = false;
        if (op !== 'grant' && auth.siteKey && tx.processId) forgetLocal(auth.siteKey, tx);
        if (o.onChange) safe(() => o.onChange(tx, op, recordId));
        render();
      }, failed);
    };

    /** Saves the signed receipt of a transaction as a JSON file (docs/receipts.md). */
    const receipt = (id) => {
      const key = `rc:${id}`;
      if (st.busy) return;
      st.busy = key;
      st.msg = '';
      st.err = false;
      st.focus = key;
      render();
      call('GET', paths.receipt(id)).then((j) => {
        const url = URL.createObjectURL(
          new Blob([JSON.stringify(j, null, 2)], { type: 'application/json' }),
        );
        const a = h('a', { href: url, download: `consent-receipt-${id}.json`, hidden: true });
        root.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 60e3);
        st.busy = null;
        render();
      }, failed);
    };

    // Grievances: the principal's own, with the app's answers, and a form to file one.
    /** English strings of the grievance section; a language's dashboard strings may override them. */
    const G_EN = {
      g_title: 'Your grievances',
      g_intro:
        'Not happy with how your data is handled? Tell us; we must answer within the period the law sets.',
      g_none: 'You have not filed a grievance.',
      g_subject: 'Subject',
      g_text: 'Your grievance',
      g_file: 'File grievance',
      g_done: 'Your grievance was filed. The answer is due by',
      g_filed: 'Filed on',
      g_due: 'Answer due by',
      g_answer: 'Answer',
      g_open: 'Awaiting answer',
      g_answered: 'Answered',
    };
    const G = (k) => S[k] || G_EN[k];
    const gs = { items: [], subject: '', text: '', busy: false };
    const loadGrievances = () =>
      call('GET', auth.portalToken ? gPath : `${gPath}?referenceId=${enc(ref)}`).then(
        (page) => {
          gs.items = page.items;
          render();
        },
        () => {},
      );
    const fileGrievance = (e) => {
      e.preventDefault();
      if (gs.busy || !gs.subject.trim() || !gs.text.trim()) return;
      gs.busy = true;
      st.focus = 'g:file';
      render();
      const body = { subject: gs.subject, description: gs.text };
      call('POST', gPath, auth.portalToken ? body : Object.assign({ referenceId: ref }, body)).then(
        (g) => {
          gs.items = [g].concat(gs.items);
          gs.busy = false;
          gs.subject = gs.text = '';
          st.msg = `${G('g_done')} ${fmt ? fmt.format(new Date(g.dueAt)) : g.dueAt}.`;
          st.err = false;
          render();
        },
        (err) => {
          gs.busy = false;
          st.msg = `${S.failed}${err.message ? ` (${err.message})` : ''}`;
          st.err = true;
          render();
        },
      );
    };
    const grievanceView = () =>
      // A region, not a <section>: the dashboard's one section is its outer frame.
      h('div', { class: 'gv', role: 'region', 'aria-labelledby': 'svc-gh' }, [
        h('h3', { id: 'svc-gh', text: G('g_title') }),
        h('p', { text: G('g_intro') }),
        gs.items.length
          ? h(
              'ul',
              { class: 'l' },
              gs.items.map((g) =>
                h('li', { 'data-grievance': g.grievanceId }, [
                  h('h4', { text: g.subject }),
                  h(
                    'dl',
                    {},
                    [
                      [
                        S.status,
                        h('span', {
                          class: `bd s-g_${g.status}`,
                          text: g.status === 'answered' ? G('g_answered') : G('g_open'),
                        }),
                      ],
                      [G('g_filed'), date(g.createdAt)],
                      [G('g_due'), date(g.dueAt)],
                    ].map(([k, v]) => h('div', {}, [h('dt', { text: k }), h('dd', {}, [v])])),
                  ),
                  h('p', { text: g.description }),
                  g.answer &&
                    h('p', { class: 'ga' }, [
                      h('strong', { text: `${G('g_answer')}: ` }),
                      g.answer,
                    ]),
                ]),
              ),
            )
          : h('p', { text: G('g_none') }),
        h('form', { class: 'gf', onsubmit: fileGrievance }, [
          h('label', { for: 'svc-gs', text: G('g_subject') }),
          h('input', {
            id: 'svc-gs',
            'data-k': 'g:subject',
            maxlength: '200',
            required: true,
            value: gs.subject,
            oninput: (e) => (gs.subject = /** @type {HTMLInputElement} */ (e.target).value),
          }),
          h('label', { for: 'svc-gt', text: G('g_text') }),
          h('textarea', {
            id: 'svc-gt',
            'data-k': 'g:text',
            maxlength: '5000',
            rows: '4',
            required: true,
            text: gs.text,
            oninput: (e) => (gs.text = /** @type {HTMLTextAreaElement} */ (e.target).value),
          }),
          h('button', { type: 'submit', 'data-k': 'g:file', text: G('g_file'), disabled: gs.busy }),
        ]),
      ]);

    const grantable = (r) => r.state === 'denied' || r.state === 'revoked';
    const button = (key, text, onclick, extra) =>
      h(
        'button',
        Object.assign(
          { type: 'button', 'data-k': key, text, onclick, disabled: !!st.busy && st.busy !== key },
          extra,
        ),
      );
    const eraseConfirm = (key, path, recordId) =>
      h('div', { class: 'cf', role: 'group', 'aria-label': S.confirmErase }, [
        h('p', { text: S.confirmErase }),
        button(`${key}:yes`, S.confirm, () => act(key, path, 'erase', recordId), { class: 'dg f' }),
        button(`${key}:no`, S.cancel, () => {
          st.confirm = null;
          st.focus = key;
          render();
        }),
      ]);
    /** grant / revoke / erase buttons for a transaction or a record; erase asks first. */
    const actions = (key, what, name, pathOf, can, recordId) => {
      if (st.confirm === key) return eraseConfirm(key, pathOf('erase'), recordId);
      const b = [];
      const aria = (verb) => (name ? `${verb}: ${name}` : null);
      if (can.grant)
        b.push(
          button(
            `${key}:grant`,
            what.grant,
            () => act(`${key}:grant`, pathOf('grant'), 'grant', recordId),
            { 'aria-label': aria(what.grant) },
          ),
        );
      if (can.revoke)
        b.push(
          button(
            `${key}:revoke`,
            what.revoke,
            () => act(`${key}:revoke`, pathOf('revoke'), 'revoke', recordId),
            { 'aria-label': aria(what.revoke) },
          ),
        );
      if (can.erase)
        b.push(
          button(
            key,
            what.erase,
            () => {
              st.confirm = key;
              st.focus = `${key}:no`;
              render();
            },
            { class: 'dg', 'aria-label': aria(what.erase) },
          ),
        );
      return b.length ? h('div', { class: 'ac' }, b) : null;
    };
    const badge = (state) => h('span', { class: `bd s-${state}`, text: S[`s_${state}`] || state });

    const txView = (tx) => {
      const id = tx.transactionId;
      const live = tx.records.filter((r) => r.state !== 'erased');
      const hid = `tx-${id}`;
      const rows = tx.records.map((r) => {
        const name = label(tx, r.purpose);
        return h('tr', {}, [
          h('th', { scope: 'row', text: name }),
          h('td', {}, [badge(r.state)]),
          h('td', {}, [date(r.updatedAt)]),
          h('td', {}, [
            actions(
              `r:${r.recordId}`,
              S,
              name,
              (op) => paths.rec(r.recordId, op),
              { grant: grantable(r), revoke: r.state === 'granted', erase: r.state !== 'erased' },
              r.recordId,
            ),
          ]),
        ]);
      });
      const meta = [
        [S.status, badge(tx.status)],
        [S.given, date(tx.createdAt)],
        [S.validUntil, date(tx.expiresAt)],
        [S.source, S[`src_${tx.source}`] || tx.source],
      ];
      return h('li', { 'data-tx': id }, [
        h('article', { 'aria-labelledby': hid }, [
          h('h3', { id: hid, tabindex: '-1', text: `${S.notice}: ${tx.processId || id}` }),
          h(
            'dl',
            {},
            meta.map(([k, v]) => h('div', {}, [h('dt', { text: k }), h('dd', {}, [v])])),
          ),
          actions(
            `t:${id}`,
            { grant: S.grantAll, revoke: S.revokeAll, erase: S.eraseAll },
            null,
            (op) => paths.tx(id, op),
            {
              // A transaction-wide grant is all or nothing: not offered once a record is erased.
              grant: live.length === tx.records.length && tx.records.some(grantable),
              revoke: tx.records.some((r) => r.state === 'granted'),
              erase: live.length > 0,
            },
          ),
          h('div', { class: 'tw' }, [
            h('table', {}, [
              h('caption', { class: 'sr', text: S.purposes }),
              h('thead', {}, [
                h(
                  'tr',
                  {},
                  [S.purpose, S.state, S.updated, S.actions].map((t) =>
                    h('th', { scope: 'col', text: t }),
                  ),
                ),
              ]),
              h('tbody', {}, rows),
            ]),
          ]),
          button(`rc:${id}`, S.receipt, () => receipt(id), { 'data-receipt': id }),
        ]),
      ]);
    };

    function render() {
      if (!alive || !ready) return;
      const prev = root.activeElement && root.activeElement.getAttribute('data-k');
      const want = st.focus || prev;
      st.focus = null;
      let body;
      if (!ref) body = [h('p', { text: S.noRef })];
      else if (st.loadError && !st.items.length)
        body = [
          h('p', { class: 'er', role: 'alert', text: S.loadFailed }),
          button('retry', S.retry, () => load()),
        ];
      else if (st.loading && !st.items.length) body = [h('p', { text: S.loading })];
      else if (!st.items.length) body = [h('p', { text: S.empty })];
      else
        body = [
          h('ul', { class: 'l' }, st.items.map(txView)),
          st.next && button('more', S.more, () => load(st.next), { disabled: st.loading }),
        ];
      root.replaceChildren(
        h(
          'section',
          {
            class: 'w',
            lang,
            dir: own(RTL, lang) ? 'rtl' : 'ltr',
            'aria-labelledby': 'svc-dh',
            'aria-busy': st.loading || !!st.busy ? 'true' : 'false',
          },
          [
            h('h2', { id: 'svc-dh', text: S.title }),
            ref && h('p', { class: 'ref' }, [`${S.ref}: `, h('code', { text: ref })]),
            h('p', {
              class: `msg${st.err ? ' er' : ''}`,
              role: st.err ? 'alert' : 'status',
              text: st.msg,
            }),
            ...body,
            ref && grievanceView(),
          ],
        ),
      );
      // Re-rendering replaces the nodes: keep keyboard focus on the same control, else on the
      // next control of the same row or transaction, else on the message that says what happened.
      if (want) {
        const scope = want.split(':').slice(0, 2).join(':');
        const t = /** @type {HTMLElement} */ (
          root.querySelector(`[data-k="${want}"]:not([disabled])`) ||
            root.querySelector(`[data-k^="${scope}"]:not([disabled])`) ||
            (want.indexOf('t:') === 0 && root.getElementById(`tx-${scope.slice(2)}`)) ||
            root.querySelector('.msg')
        );
        if (!/^(BUTTON|INPUT|TEXTAREA)$/.test(t.tagName) && !t.hasAttribute('tabindex'))
          t.setAttribute('tabindex', '-1');
        t.focus();
      }
    }

    if (ref) {
      void load();
      void loadGrievances();
    } else render();
    return {
      refresh: () => load(),
      unmount: () => {
        alive = false;
        host.remove();
      },
    };
  }

  w.SvcDashboard = { version: '1', mount };

  // Auto-mount from the script tag's own attributes (e.g. the hosted portal page).
  const me = /** @type {HTMLScriptElement | null} */ (d.currentScript);
  if (me && me.hasAttribute('data-reference-id')) {
    const go = () => {
      const el = d.getElementById(me.getAttribute('data-target') || 'consent-detail-root');
      if (!el) return;
      const token = me.getAttribute('data-portal-token');
      mount(el, {
        baseUrl: me.getAttribute('data-base-url') || new URL('.', me.src).href,
        referenceId: me.getAttribute('data-reference-id'),
        auth: token
          ? { portalToken: token }
          : { siteKey: me.getAttribute('data-site-key'), token: me.getAttribute('data-token') },
        lang: me.getAttribute('data-lang') || (d.documentElement.lang || 'en').split('-')[0],
      });
    };
    if (d.readyState === 'loading') d.addEventListener('DOMContentLoaded', go);
    else go();
  }
})(window, document);
