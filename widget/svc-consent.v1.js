// @ts-check
/*! svc-consent.v1.js: the consent widget (docs/widget.md).
 * ES2019, no dependencies, no build step.
 * <script async src="{widget_url}/svc-consent.v1.js" data-site-key="APP_…"></script>
 * Optional: data-lang, data-region (e.g. IN-MH), data-portal-url (may hold {referenceId}),
 * data-complaint-url.
 * Dashboard: <div id="consent-detail-root" data-reference-id="SVC-REF-…" data-token="svc_pt_…">,
 * the principal token minted by the app's server; without data-token, the token this widget got
 * from its own capture for that referenceId, if any. */
((w, d) => {
  'use strict';
  const P = w.performance;
  const safe = (f, x) => {
    try {
      return f();
    } catch {
      return x;
    }
  };
  // Lookups by own property only: a language named `valueOf` or `__proto__` is just unknown.
  const own = (o, k) => (Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined);
  const mark = (n) => safe(() => P.mark(n));
  mark('svc:start');
  if (w.SvcConsent) return; // loaded twice: the first copy owns the page
  const me = /** @type {HTMLScriptElement | null} */ (
    d.currentScript || d.querySelector('script[src*="svc-consent.v1"][data-site-key]')
  );
  if (!me) return;

  const attr = (el, n) => el.getAttribute(n);
  const SITE = attr(me, 'data-site-key') || '';
  const REGION = (attr(me, 'data-region') || '').toUpperCase();
  const BASE = new URL('.', me.src).href.replace(/\/$/, ''); // the API is where the script is
  const NS = `svc_${SITE}_`; // localStorage keys and cookie names: svc_<siteKey>_<slot>
  const slot = (pid) => (REGION ? `${pid}.${REGION}` : pid);
  const LANG_KEY = `svc_${SITE}.lang`;
  const PID = /^[a-z0-9]+(_[a-z0-9]+)*$/;
  const ROOT = 'consent-detail-root';
  const SEL = `[svc-trigger],#${ROOT}`;
  const DPB = attr(me, 'data-complaint-url') || 'https://www.dpb.gov.in/';
  const LS = () => w.localStorage;

  const bound = new WeakMap(); // the click gates: element -> processId
  const warned = new WeakSet();
  const pending = {}; // processId -> dialog or capture under way
  const checks = {}; // slot -> status check under way (a Promise)
  const mem = {}; // state when neither localStorage nor cookies work
  const cfgs = {}; // `${processId}|${lang}` -> Promise<config>
  let ui = null; // { host, root } of the Shadow DOM

  /* UI strings: English here; another language's come with the notice config (`ui`) or, before
     one or without one, from GET /api/v1/widget/strings/{lang} (cached by the browser). */
  const RTL = { ks: 1, sd: 1, ur: 1 };
  const dir = (l) => (own(RTL, l) ? 'rtl' : 'ltr');
  const LANGS = 'en as bn brx doi gu hi kn ks kok mai ml mni mr ne or pa sa sat sd ta te ur'.split(
    ' ',
  );
  const EN = {
    close: 'Close',
    loading: 'Loading…',
    failed: 'Your choice could not be saved. Please try again.',
    loadFailed: 'The consent notice could not be loaded. Please try again later.',
    pending: 'Saved. It takes effect once a parent or guardian has verified it.',
  };
  const got = {}; // language -> its fetched strings
  const strings = (lang, cfg) => Object.assign({}, EN, own(got, lang), cfg && cfg.ui);
  /** Fetches the strings of `lang` once; never fails (English stays). */
  const need = (lang) =>
    lang === 'en' || own(got, lang)
      ? Promise.resolve()
      : fetch(`${BASE}/api/v1/widget/strings/${lang}`, { credentials: 'omit' })
          .then((r) => r.json())
          .then(
            (j) => {
              if (j.widget) got[lang] = j.widget;
            },
            () => {},
          );
  const prefLang = () => {
    const l = (
      safe(() => LS().getItem(LANG_KEY)) ||
      attr(me, 'data-lang') ||
      d.documentElement.lang ||
      navigator.language ||
      ''
    )
      .toLowerCase()
      .split('-')[0];
    return LANGS.indexOf(l) < 0 ? 'en' : l;
  };

  const warn = (m) => w.console && console.warn(`[svc-consent] ${m}`);
  const h = (tag, a, kids) => {
    const el = d.createElement(tag);
    for (const k in a) {
      const v = a[k];
      if (v == null || v === false) continue;
      if (k === 'text') el.textContent = v;
      else if (k.slice(0, 2) === 'on') el.addEventListener(k.slice(2), v);
      else if (k === 'checked' || k === 'disabled') el[k] = v;
      else el.setAttribute(k, v === true ? '' : v);
    }
    for (const c of kids || []) if (c != null && c !== false) el.append(c);
    return el;
  };
  // An Idempotency-Key needs randomUUID (secure contexts); plain-http pages send none.
  const uuid = () => safe(() => w.crypto.randomUUID(), null);
  const api = (method, path, body, idemKey, token) => {
    const headers = { 'X-Site-Key': SITE };
    if (body) headers['Content-Type'] = 'application/json';
    if (idemKey) headers['Idempotency-Key'] = idemKey;
    if (token) headers.Authorization = `Bearer ${token}`;
    return fetch(BASE + path, { method, headers, body, mode: 'cors', credentials: 'omit' }).then(
      (r) =>
        r
          .json()
          .catch(() => ({}))
          .then((j) => {
            if (r.ok) return j;
            throw Object.assign(new Error(j.detail || j.title || `HTTP ${r.status}`), {
              status: r.status,
            });
          }),
    );
  };
  const config = (pid, lang) => {
    const k = `${pid}|${lang}`;
    return (cfgs[k] =
      cfgs[k] ||
      api(
        'GET',
        `/api/v1/widget/config/${pid}?lang=${lang}${REGION ? `&region=${encodeURIComponent(REGION)}` : ''}`,
      ).catch((e) => {
        delete cfgs[k]; // not cached: the next click retries
        throw e;
      }));
  };

  /* Consent state: localStorage plus a cookie, both svc_<siteKey>_<processId>. The principal
     token from the capture (`token`) is kept in localStorage (or memory) only, never in the
     cookie, which the browser would send to the app's server with every request. */
  const cookie = (k, v, exp) => {
    if (v === undefined) {
      const m = d.cookie.match(new RegExp(`(?:^|; )${k}=([^;]*)`));
      return m ? decodeURIComponent(m[1]) : null;
    }
    d.cookie = `${k}=${
      v === null
        ? '; max-age=0'
        : `${encodeURIComponent(v)}; expires=${new Date(exp).toUTCString()}`
    }; path=/; SameSite=Lax${location.protocol === 'https:' ? '; Secure' : ''}`;
  };
  const peek = (pid) => {
    const k = NS + pid;
    const raw = safe(() => LS().getItem(k)) || mem[k] || safe(() => cookie(k));
    return raw ? safe(() => JSON.parse(raw), null) : null;
  };
  const read = (pid) => {
    const s = peek(pid);
    if (s && Date.parse(s.expiresAt) > Date.now()) return s;
    if (s) forget(pid);
    return null;
  };
  const save = (pid, s) => {
    const k = NS + pid;
    const raw = JSON.stringify(s);
    const { token: _token, ...rest } = s;
    const stored = safe(() => (LS().setItem(k, raw), true));
    safe(() => cookie(k, JSON.stringify(rest), s.expiresAt));
    if (stored) delete mem[k];
    else mem[k] = raw;
  };
  /** Its triggers gate again (only if the state holds `consentId`, when given). */
  const forget = (pid, consentId) => {
    const s = peek(pid);
    const k = NS + pid;
    if (!s || (consentId && s.consentId !== consentId)) return false;
    safe(() => LS().removeItem(k));
    safe(() => cookie(k, null));
    delete mem[k];
    return true;
  };
  const storedPids = () =>
    safe(() => Object.keys(LS()), [])
      .filter((k) => k.indexOf(NS) === 0)
      .map((k) => k.slice(NS.length));
  const state = (pid) => read(slot(pid));
  /** The principal token this widget got for `ref` from a capture, while it lasts (24 h). */
  const tokenFor = (ref) => {
    for (const pid of storedPids().concat(Object.keys(mem).map((k) => k.slice(NS.length)))) {
      const s = read(pid);
      if (s && s.token && s.referenceId === ref && Date.parse(s.capturedAt) > Date.now() - 864e5)
        return s.token;
    }
    return null;
  };
  const knownRef = () => {
    const root = d.getElementById(ROOT);
    let ref = root && attr(root, 'data-reference-id');
    for (const pid of storedPids()) ref = ref || (read(pid) || {}).referenceId;
    return ref;
  };

  /* The click gate. */
  const bind = (el) => {
    const pid = attr(el, 'svc-trigger');
    if (pid !== null && PID.test(pid)) return !!bound.set(el, pid); // trigger svc-attr-<pid>
    bound.delete(el);
    if (pid !== null && !warned.has(el)) warn(`svc-trigger="${pid}" is not a trigger key; ignored`);
    warned.add(el);
    return false;
  };
  const visit = (el) => {
    if (el.id === ROOT) dashboard(el);
    if (el.hasAttribute('svc-trigger') || bound.has(el)) bind(el);
  };
  const scan = (n) => {
    if (n.nodeType !== 1) return;
    if (n.matches(SEL)) visit(n);
    n.querySelectorAll(SEL).forEach(visit);
  };
  const triggerOf = (e) => {
    for (const n of e.composedPath()) {
      if (n === d || n === w) break;
      if (bound.has(n)) return n;
      // Not seen yet (the observer runs at the next microtask).
      if (n.nodeType === 1 && n.hasAttribute('svc-trigger') && bind(n)) return n;
    }
    return null;
  };
  const isSilent = (el) => attr(el, 'svc-trigger-mode') === 'silent';
  const onClick = (e) => {
    const el = triggerOf(e);
    if (!el) return;
    const pid = bound.get(el);
    const s = state(pid);
    const wait = s && checks[slot(pid)];
    if (s && !pending[pid] && !wait) return attach(el, pid, s.consentId); // consented: through
    e.preventDefault();
    e.stopImmediatePropagation();
    if (pending[pid]) return;
    pending[pid] = 1;
    const init = { bubbles: true, cancelable: true, composed: true, view: w };
    for (const k of 'detail button ctrlKey shiftKey altKey metaKey clientX clientY screenX screenY'.split(
      ' ',
    ))
      init[k] = e[k];
    const go = { el, pid, target: e.composedPath()[0], init, lang: prefLang() };
    if (!wait) return ask(go);
    // A status check is under way: the click waits for it, 2 s at most, then the gate holds.
    void Promise.race([wait, new Promise((ok) => setTimeout(ok, 2e3, 1))]).then((late) => {
      if (late || !state(pid)) return ask(go);
      delete pending[pid];
      replay(go);
    });
  };
  /** The dialog, or the silent capture. */
  const ask = (go) => {
    const { el, pid } = go;
    if (!isSilent(el)) return dialog(go);
    capture(go, 'silent', []).then(
      (r) => finish(go, r, 'accept'),
      (err) => {
        delete pending[pid];
        warn(`capture failed: ${err.message}`);
        void need(go.lang).then(() => toast(strings(go.lang).failed, go.lang));
      },
    );
  };
  /** Hover or focus: fetch the notice before the click. */
  const onIntent = (e) => {
    const el = triggerOf(e);
    if (el && !isSilent(el) && !state(bound.get(el)))
      config(bound.get(el), prefLang()).catch(() => {});
  };
  const attach = (el, pid, id) => {
    const box = el.form || el.closest('form') || (isSilent(el) ? el.parentElement : null);
    if (!box) return;
    let inp = [...box.querySelectorAll('input[name="svc-transaction-id"]')].find(
      (i) => attr(i, 'data-svc-process') === pid,
    );
    if (!inp)
      box.append(
        (inp = h('input', { type: 'hidden', name: 'svc-transaction-id', 'data-svc-process': pid })),
      );
    inp.value = id;
  };
  const capture = (go, mode, purposes) => {
    const body = JSON.stringify({
      siteKey: SITE,
      processId: go.pid,
      mode,
      purposes,
      language: go.lang,
      pageUrl: location.href.slice(0, 2048),
      region: REGION || undefined,
    });
    if (go.body !== body) go.key = uuid(); // the same body sent again is the same capture
    go.body = body;
    return api('POST', '/api/v1/widget/capture', body, go.key);
  };
  const finish = (go, r, decision) => {
    const { el, pid } = go;
    const { consentId, referenceId, expiresAt } = r;
    save(slot(pid), {
      consentId,
      referenceId,
      expiresAt,
      decision,
      capturedAt: new Date().toISOString(),
      token: r.principalToken || undefined,
      st: r.statusToken,
    });
    delete pending[pid];
    if (ui) ui.root.querySelectorAll('.t').forEach((t) => t.remove());
    // Verifiable parental consent: nothing is granted until the app confirms the verification.
    if (r.parentalVerification)
      void need(go.lang).then(() => toast(strings(go.lang, go.cfg).pending, go.lang));
    attach(el, pid, consentId);
    el.dispatchEvent(
      new CustomEvent('svc:consent:captured', {
        bubbles: true,
        composed: true,
        detail: {
          consentId,
          referenceId,
          expiresAt,
          processId: pid,
          triggerId: `svc-attr-${pid}`,
          decision,
          parentalVerification: r.parentalVerification || null,
        },
      }),
    );
    if (go.done) return go.done(r); // a cookie banner decision: no click to replay
    replay(go);
  };
  /** The visitor's own action now proceeds: the same click, let through. */
  const replay = ({ el, target, init }) => {
    if (el.isConnected)
      (target && target.nodeType === 1 && el.contains(target) ? target : el).dispatchEvent(
        new MouseEvent('click', init),
      );
  };

  /* UI: one Shadow DOM host; styles in a constructed stylesheet (allowed by a strict CSP). */
  const CSS =
    ':host{all:initial!important;display:contents!important}' +
    '.d,.t{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans Devanagari",sans-serif;color:#1c1c1c;text-align:start;box-sizing:border-box}' +
    '.d{width:min(34rem,calc(100vw - 2rem));max-height:calc(100vh - 2rem);overflow:auto;margin:auto;padding:1.25rem 1.5rem;border:0;border-radius:12px;background:#fff;box-shadow:0 12px 48px rgba(0,0,0,.35)}' +
    '.d::backdrop{background:rgba(12,16,24,.55)}' +
    '.hd{display:flex;gap:.5rem;align-items:flex-start}' +
    'h2{flex:1;margin:0;font-size:1.25rem;line-height:1.3}h2:focus{outline:none}' +
    'h3{margin:0 0 .25rem;font-size:.95rem}p{margin:.5rem 0}.bd{white-space:pre-line}' +
    'ul{list-style:none;margin:.75rem 0;padding:0}' +
    '.p{display:grid;grid-template-columns:auto 1fr;gap:.1rem .6rem;padding:.6rem 0;border-top:1px solid #e3e6ea}' +
    '.p input{width:1.15rem;height:1.15rem;margin:.2rem 0 0;accent-color:#1a4fd6}' +
    '.p label{font-weight:600}.q{font-weight:400;color:#4a5360}' +
    '.pd{grid-column:2;color:#4a5360;font-size:.9rem}.pd p{margin:.15rem 0}' +
    '.a{display:flex;gap:.75rem;margin-top:1rem}button,select{font:inherit}' +
    '.b,.b2{flex:1 1 0;min-height:2.75rem;padding:.55rem 1rem;border:2px solid #1a4fd6;border-radius:8px;background:#1a4fd6;color:#fff;font-weight:600;cursor:pointer}' +
    '.b2{width:100%;margin-top:.75rem;background:#fff;color:#1a4fd6}' +
    '.x{border:0;background:none;font-size:1.5rem;line-height:1;padding:.2rem .5rem;border-radius:6px;color:inherit;cursor:pointer}' +
    'select{padding:.25rem;border:1px solid #8a94a3;border-radius:6px;background:#fff;color:#1c1c1c}' +
    'a{color:#1a4fd6}.r{margin-top:1rem;padding-top:.75rem;border-top:1px solid #e3e6ea;font-size:.875rem;color:#4a5360}' +
    '.r ul{margin:.25rem 0}.r li{margin:.2rem 0}.u{word-break:break-all}' +
    '.e{color:#b00020;font-weight:600}.e:empty{display:none}[aria-busy=true] .a,[aria-busy=true] .b2{opacity:.6}' +
    ':focus-visible{outline:3px solid #e35d00;outline-offset:2px}' +
    '.t{position:fixed;z-index:2147483647;inset-inline-end:1rem;bottom:1rem;max-width:24rem;display:flex;gap:.5rem;align-items:flex-start;padding:.75rem 1rem;border-radius:8px;background:#1c1c1c;color:#fff;box-shadow:0 6px 24px rgba(0,0,0,.3)}';
  const shadow = () => {
    if (!ui) {
      const host = d.createElement('svc-consent-ui');
      const root = host.attachShadow({ mode: 'open' });
      const adopted = safe(() => {
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
        root.adoptedStyleSheets = [sheet];
        return 1;
      }, 0);
      if (!adopted) root.append(h('style', { text: CSS }));
      ui = { host, root };
    }
    if (!ui.host.isConnected) (d.body || d.documentElement).append(ui.host);
    return ui.root;
  };
  const closeBtn = (S, onclick) =>
    h('button', { type: 'button', class: 'x', 'aria-label': S.close, text: '×', onclick });
  const toast = (msg, lang) => {
    const root = shadow();
    root.querySelectorAll('.t').forEach((t) => t.remove());
    const t = h('div', { class: 't', role: 'alert', lang, dir: dir(lang) }, [
      h('span', { text: msg }),
    ]);
    t.append(closeBtn(strings(lang), () => t.remove()));
    root.append(t);
  };

  const dialog = (go) => {
    go.choice = {};
    const S = strings(go.lang);
    const box = h('dialog', {
      class: 'd',
      role: 'dialog',
      'aria-modal': 'true',
      'aria-labelledby': 'svc-t',
      'aria-describedby': 'svc-b',
      'aria-busy': 'true',
      lang: go.lang,
      dir: dir(go.lang),
      id: `svc-attr-${go.pid}`,
      onkeydown: (e) => keys(e, go),
      oncancel: (e) => {
        e.preventDefault();
        dismiss(go);
      },
    });
    go.dlg = box;
    box.append(head(go, S, S.loading), h('p', { id: 'svc-b' }));
    shadow().append(box);
    box.showModal();
    load(go, go.lang);
  };
  const head = (go, S, title, cfg) => {
    const kids = [h('h2', { id: 'svc-t', tabindex: '-1', text: title })];
    if (cfg && cfg.languages.length > 1) {
      const sel = h('select', {
        'aria-label': S.language,
        class: 'lg',
        onchange: () => {
          safe(() => LS().setItem(LANG_KEY, sel.value));
          load(go, sel.value, true);
        },
      });
      for (const l of cfg.languages) {
        const o = h('option', { value: l, lang: l, text: own(cfg.languageNames || {}, l) || l });
        o.selected = l === cfg.language;
        sel.append(o);
      }
      kids.push(sel);
    }
    kids.push(closeBtn(S, () => dismiss(go)));
    return h('div', { class: 'hd' }, kids);
  };
  const load = (go, lang, fromSwitcher) =>
    config(go.pid, lang).then(
      (c) => go.dlg && render(go, c, fromSwitcher),
      (err) => {
        warn(`notice ${go.pid}: ${err.message}`);
        void need(lang).then(() => {
          if (!go.dlg) return;
          const S = strings(lang);
          go.dlg.replaceChildren(head(go, S, S.loadFailed), h('p', { id: 'svc-b' }));
          go.dlg.removeAttribute('aria-busy');
          go.dlg.querySelector('.x').focus();
        });
      },
    );
  const render = (go, c, fromSwitcher) => {
    const S = strings(c.language, c);
    const box = go.dlg;
    go.cfg = c;
    go.lang = c.language;
    box.setAttribute('lang', c.language);
    box.setAttribute('dir', dir(c.language));
    box.removeAttribute('aria-busy');
    const purposes = c.purposes.map((p) => {
      const id = `svc-p-${p.name}`;
      return h('li', { class: 'p' }, [
        h('input', {
          type: 'checkbox',
          id,
          name: p.name,
          checked: p.required || !!go.choice[p.name], // optional purposes start unticked
          disabled: p.required,
          'aria-describedby': `${id}-d`,
          onchange: (e) => (go.choice[p.name] = e.target.checked),
        }),
        h('label', { for: id }, [
          p.label,
          p.required && h('span', { class: 'q', text: ` (${S.required})` }),
        ]),
        h('div', { class: 'pd', id: `${id}-d` }, [
          p.description && h('p', { text: p.description }),
          p.dataItems.length > 0 && h('p', { text: `${S.dataItems}: ${p.dataItems.join(', ')}` }),
        ]),
      ]);
    });
    const btn = (cls, act, text) =>
      h('button', {
        type: 'button',
        class: cls,
        'data-act': act,
        text,
        onclick: () => decide(go, act),
      });
    box.replaceChildren(
      head(go, S, c.title, c),
      h('p', { id: 'svc-b', class: 'bd', text: c.body }),
      h('ul', { 'aria-label': c.title }, purposes),
      h('p', { class: 'e', role: 'alert' }),
      // Rejecting is exactly as prominent as accepting: same class, same size, side by side.
      h('div', { class: 'a' }, [btn('b', 'reject', S.rejectAll), btn('b', 'accept', S.acceptAll)]),
      btn('b2', 'save', S.save),
      rights(S, c),
    );
    box.querySelector(fromSwitcher ? '.lg' : 'h2').focus();
  };
  /** DPDP Rule 3: how to withdraw consent, exercise rights and complain to the Board. */
  const rights = (S, c) => {
    const ref = knownRef();
    const tpl = c.portalUrlTemplate || c.portalUrl || attr(me, 'data-portal-url');
    const url =
      tpl && (tpl.indexOf('{referenceId}') < 0 || ref)
        ? tpl.split('{referenceId}').join(encodeURIComponent(ref || ''))
        : null;
    const link = (href, text) =>
      h('li', {}, [h('a', { href, target: '_blank', rel: 'noopener', text })]);
    return h('div', { class: 'r' }, [
      h('h3', { text: S.rightsTitle }),
      h('p', { text: S.rightsText }),
      !url &&
        ref &&
        h('p', {}, [`${S.portalAt} `, h('span', { class: 'u', text: `${BASE}/portal/${ref}` })]),
      h('ul', {}, [
        url && link(url, S.withdraw),
        url && link(url, S.rights),
        link(DPB, S.complain),
      ]),
    ]);
  };
  const decide = (go, act) => {
    if (go.busy || !go.cfg) return;
    const names = go.cfg.purposes
      .filter((p) => act === 'accept' || p.required || (act === 'save' && go.choice[p.name]))
      .map((p) => p.name);
    go.busy = true;
    go.dlg.setAttribute('aria-busy', 'true');
    go.dlg.querySelector('.e').textContent = '';
    capture(go, 'granular', names).then(
      (r) => {
        close(go);
        finish(go, r, act === 'save' ? 'custom' : act);
      },
      (err) => {
        go.busy = false;
        warn(`capture failed: ${err.message}`);
        if (!go.dlg) return;
        go.dlg.removeAttribute('aria-busy');
        go.dlg.querySelector('.e').textContent = strings(go.lang, go.cfg).failed;
      },
    );
  };
  const close = (go) => {
    go.dlg.close();
    go.dlg.remove();
    go.dlg = null;
    safe(() => go.el.focus({ preventScroll: true }));
  };
  /** Esc, ×: no consent, the trigger stays gated. */
  const dismiss = (go) => {
    if (!go.dlg) return;
    close(go);
    delete pending[go.pid];
  };
  const keys = (e, go) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      dismiss(go);
    } else if (e.key === 'Tab') {
      // Focus trap: Tab wraps last -> first, Shift+Tab first -> last.
      const f = [...go.dlg.querySelectorAll('button,input,select,a[href]')].filter(
        (x) => !x.disabled,
      );
      const a = go.dlg.getRootNode().activeElement;
      const wrap = e.shiftKey
        ? a === f[0] || !go.dlg.contains(a) || a.tagName === 'H2'
        : a === f[f.length - 1];
      if (wrap) {
        e.preventDefault();
        f[e.shiftKey ? f.length - 1 : 0].focus();
      }
    }
  };

  /* The embeddable dashboard, loaded on demand when #consent-detail-root appears. */
  let dash = null;
  const mounted = new WeakMap();
  // Pages enforcing Trusted Types get the script URL through a policy named "svc-consent".
  let tt = null; // created once: a second policy of that name is refused
  const scriptUrl = (u) =>
    safe(
      () =>
        (tt =
          tt ||
          w.trustedTypes.createPolicy('svc-consent', { createScriptURL: String })).createScriptURL(
          u,
        ),
      u,
    );
  const dashboard = (el) => {
    const ref = attr(el, 'data-reference-id') || '';
    const token = attr(el, 'data-token') || (ref && tokenFor(ref)) || '';
    const prev = mounted.get(el);
    if (prev && prev.ref === ref && prev.token === token) return;
    const entry = { ref, token, handle: null };
    mounted.set(el, entry);
    dash =
      dash ||
      new Promise((ok, ko) => {
        if (w.SvcDashboard) return ok(w.SvcDashboard);
        const s = h('script', { async: true, onload: () => ok(w.SvcDashboard), onerror: ko });
        s.src = scriptUrl(`${BASE}/svc-dashboard.v1.js`);
        (d.head || d.documentElement).append(s);
      });
    dash.then(
      (D) => {
        if (prev && prev.handle) prev.handle.unmount();
        if (mounted.get(el) !== entry) return;
        entry.handle = D.mount(el, {
          baseUrl: BASE,
          referenceId: ref,
          auth: { siteKey: SITE, token },
          lang: prefLang(),
          onChange: (tx, op) =>
            op !== 'grant' && tx.processId && forget(slot(tx.processId), tx.transactionId),
        });
      },
      () => {
        dash = null;
        warn('the dashboard script could not be loaded');
      },
    );
  };

  /* At each load and every 5 minutes: drop expired state, and ask whether each stored decision
     still stands (docs/widget-status.md). Withdrawn, erased or expired anywhere, or unknown
     (404): dropped, its triggers gate again. A check that fails otherwise keeps the decision
     until the next one. */
  const sweep = () => {
    for (const k of storedPids()) {
      const s = read(k);
      if (!s || !s.st || checks[k]) continue;
      checks[k] = api('GET', `/api/v1/widget/status/${s.st}`)
        .then(
          (r) => r.live || forget(k, s.consentId),
          (e) => e.status === 404 && forget(k, s.consentId),
        )
        .then(() => {
          delete checks[k];
        });
    }
  };

  if (!/^APP_[A-Za-z0-9]+$/.test(SITE)) warn('data-site-key is missing or not a site key (APP_…)');
  w.addEventListener('click', onClick, true);
  w.addEventListener('pointerover', onIntent, true);
  w.addEventListener('focusin', onIntent, true);
  scan(d.documentElement);
  new MutationObserver((recs) => {
    for (const r of recs) {
      if (r.type === 'childList') r.addedNodes.forEach(scan);
      else visit(r.target);
    }
  }).observe(d.documentElement, {
    childList: true,
    subtree: true,
    attributes: true,
    attributeFilter: ['svc-trigger', 'data-reference-id', 'data-token', 'id'],
  });
  mark('svc:gated');
  safe(() => P.measure('svc:gate', 'svc:start', 'svc:gated'));

  w.SvcConsent = {
    version: '1',
    siteKey: SITE,
    region: REGION || null,
    baseUrl: BASE,
    state,
    forget: (pid, consentId) => forget(slot(pid), consentId),
    isGated: (el) => !!el && bound.has(el) && !state(bound.get(el)),
  };
  sweep();
  w.setInterval(sweep, 3e5);

  /* Cookie banner (docs/cookie-banner.md): svc-cookies.v1.js runs the gated scripts of the
     stored decision or shows the banner; a decision keeps its `purposes` in the state. */
  const CK = attr(me, 'data-cookie-notice');
  if (CK && PID.test(CK)) {
    const k = {
      pid: CK,
      h,
      dir,
      warn,
      strings,
      url: scriptUrl,
      api,
      lang: prefLang,
      config: (lang) => config(CK, lang),
      // The stored decision once this load's status check has settled (it settles on errors too).
      stored: () => Promise.resolve(checks[slot(CK)]).then(() => state(CK)),
      decide: (el, done, cfg, act, names) => {
        const go = { el, pid: CK, lang: cfg ? cfg.language : prefLang(), cfg };
        go.done = (r) => {
          const purposes = r.parentalVerification ? [] : JSON.parse(go.body).purposes;
          save(slot(CK), Object.assign(peek(slot(CK)), { purposes }));
          done(purposes, r.consentId);
        };
        if (!names) return dialog(go);
        return capture(go, 'granular', names).then((r) => finish(go, r, act));
      },
    };
    const mod = new Promise((ok, ko) => {
      const s = h('script', { async: true, onload: () => ok(w.SvcCookies), onerror: ko });
      s.src = scriptUrl(`${BASE}/svc-cookies.v1.js`);
      (d.head || d.documentElement).append(s);
    }).then(
      (C) => C.start(k),
      () => warn('the cookie banner script could not be loaded'),
    );
    w.SvcConsent.openCookieSettings = () => void mod.then((c) => c && c.open());
  }
})(window, document);
