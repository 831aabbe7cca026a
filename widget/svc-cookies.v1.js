// @ts-check
/*! svc-cookies.v1.js: the cookie banner mode of the consent widget (docs/api.md, Cookie banner).
 * ES2019, no dependencies, no build step. svc-consent.v1.js loads it when its script tag has
 * data-cookie-notice="<trigger key>"; it is not meant to be included on its own.
 * Gated content: <script type="text/plain" data-svc-purpose="analytics" src="…"></script>,
 * <iframe data-svc-src="…" data-svc-purpose="marketing"></iframe> (img too). */
((w, d) => {
  'use strict';
  if (w.SvcCookies) return;
  const GATED = 'script[type="text/plain"][data-svc-purpose],[data-svc-src][data-svc-purpose]';
  const CSS =
    ':host{all:initial!important;display:contents!important}' +
    '.k{position:fixed;z-index:2147483646;inset-inline:0;bottom:0;display:flex;flex-direction:column;gap:.75rem;max-height:100vh;box-sizing:border-box;padding:1rem 1.5rem;border-top:1px solid #c5cbd3;background:#fff;color:#1c1c1c;box-shadow:0 -6px 24px rgba(0,0,0,.2);font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","Noto Sans Devanagari",sans-serif;text-align:start}' +
    '.x{flex:0 1 auto;min-height:0;overflow:auto}' +
    'h2{margin:0 0 .25rem;font-size:1.05rem;line-height:1.3}p{margin:0;white-space:pre-line}' +
    '.a{display:flex;flex:none;flex-wrap:wrap;gap:.75rem}' +
    '.b,.c{flex:1 1 9rem;min-height:2.75rem;padding:.55rem 1rem;border:2px solid #1a4fd6;border-radius:8px;background:#1a4fd6;color:#fff;font:inherit;font-weight:600;cursor:pointer}' +
    '.c{background:#fff;color:#1a4fd6}[aria-busy=true] .a{opacity:.6}' +
    '.e{color:#b00020;font-weight:600}.e:empty{display:none}' +
    ':focus-visible{outline:3px solid #e35d00;outline-offset:2px}';

  /** `k`: what svc-consent.v1.js lends this module (its helpers, the notice's trigger key). */
  const start = (k) => {
    const { h } = k;
    let granted = new Set();
    const seen = new WeakSet(); // gated elements already run (or queued to run)
    const queue = []; // gated scripts to run, in document order
    let waiting = false; // an external script is loading: the next ones wait for it

    /* Activation: a gated script is re-created as a real one in its place (an external one
       holds the queue until it has loaded or failed); an iframe or image gets its src. */
    const next = () => {
      while (!waiting && queue.length) {
        const el = queue.shift();
        if (!el.isConnected) continue;
        const s = d.createElement('script');
        for (const a of el.attributes)
          if (!/^(type|src|nonce|data-svc-src)$/.test(a.name)) s.setAttribute(a.name, a.value);
        s.nonce = el.nonce;
        const src = el.getAttribute('src') || el.getAttribute('data-svc-src');
        try {
          if (src) {
            s.async = false;
            s.onload = s.onerror = () => {
              waiting = false;
              next();
            };
            s.src = k.url(new URL(src, d.baseURI).href);
          } else s.text = el.text;
          seen.add(s);
          el.replaceWith(s);
          waiting = !!src;
        } catch (e) {
          waiting = false;
          k.warn(`a gated script could not be run: ${e.message}`);
        }
      }
    };
    /** Every purpose the element names is granted (one at least). */
    const allowed = (el) => {
      const ps = el.getAttribute('data-svc-purpose').split(/\s+/).filter(Boolean);
      return ps.length > 0 && ps.every((p) => granted.has(p));
    };
    const scan = (n) => {
      if (n.nodeType !== 1) return;
      const els = [...n.querySelectorAll(GATED)];
      if (n.matches(GATED)) els.unshift(n);
      for (const el of els) {
        if (seen.has(el) || !allowed(el)) continue;
        seen.add(el);
        if (el.tagName === 'SCRIPT') queue.push(el);
        else el.setAttribute('src', el.getAttribute('data-svc-src'));
      }
      next();
    };
    new MutationObserver((recs) => {
      for (const r of recs) r.addedNodes.forEach(scan);
    }).observe(d.documentElement, { childList: true, subtree: true });

    /** Takes `purposes` as granted from now on and runs what they allow. */
    const apply = (purposes, consentId, source) => {
      granted = new Set(purposes);
      scan(d.documentElement);
      d.dispatchEvent(
        new CustomEvent('svc:consent:changed', {
          detail: { triggerKey: k.pid, purposes: purposes.slice(), consentId, source },
        }),
      );
    };

    /* The banner: a bottom bar in its own Shadow DOM, first in the body's tab order. */
    let bar = null; // { host, box } while shown
    let loading = null;
    const hide = () => {
      if (bar) bar.host.remove();
      bar = null;
    };
    const show = (focus) => {
      if (bar) return focus && bar.box.querySelector('button').focus();
      loading =
        loading ||
        k.config(k.lang()).then(
          (c) => {
            loading = null;
            if (c.kind !== 'cookie') k.warn(`notice ${k.pid} is not a cookie notice`);
            else render(c, focus);
          },
          (e) => {
            loading = null;
            k.warn(`cookie notice ${k.pid}: ${e.message}`);
          },
        );
    };
    const render = (c, focus) => {
      const S = k.strings(c.language, c);
      let busy = false;
      const err = h('p', { class: 'e', role: 'alert' });
      const act = (a, el) => {
        if (busy) return;
        prev = w.SvcConsent.state(k.pid);
        if (a === 'choose') return k.decide(el, decided);
        const names = c.purposes.filter((p) => a === 'accept' || p.required).map((p) => p.name);
        busy = true;
        box.setAttribute('aria-busy', 'true');
        err.textContent = '';
        k.decide(el, decided, c, a, names)
          .then(null, (e) => {
            k.warn(`capture failed: ${e.message}`);
            err.textContent = S.failed;
          })
          .finally(() => {
            busy = false;
            box.removeAttribute('aria-busy');
          });
      };
      const btn = (a, cls, text) =>
        h('button', {
          type: 'button',
          class: cls,
          'data-act': a,
          text,
          onclick: (e) => act(a, e.currentTarget),
        });
      const box = h(
        'section',
        { class: 'k', 'aria-label': c.title, lang: c.language, dir: k.dir(c.language) },
        [
          h('div', { class: 'x' }, [h('h2', { text: c.title }), h('p', { text: c.body })]),
          err,
          // Rejecting is exactly as prominent as accepting: same class, same size, side by side.
          h('div', { class: 'a' }, [
            btn('reject', 'b', S.rejectAll),
            btn('accept', 'b', S.acceptAll),
            btn('choose', 'c', S.manage),
          ]),
        ],
      );
      const host = d.createElement('svc-cookie-banner');
      const root = host.attachShadow({ mode: 'open' });
      try {
        const sheet = new CSSStyleSheet();
        sheet.replaceSync(CSS);
        root.adoptedStyleSheets = [sheet];
      } catch {
        root.append(h('style', { text: CSS }));
      }
      root.append(box);
      bar = { host, box };
      d.body.prepend(host);
      if (focus) box.querySelector('button').focus();
    };
    /* A new decision replaces the stored one: that consent is withdrawn while the widget holds
       its principal token (the capture's, 24 h). */
    let prev = null;
    const decided = (purposes, consentId) => {
      hide();
      apply(purposes, consentId, 'decision');
      if (prev && prev.token && prev.consentId !== consentId)
        k.api(
          'POST',
          `/api/public/consents/my-transactions/${encodeURIComponent(prev.consentId)}/revoke`,
          JSON.stringify({ referenceId: prev.referenceId }),
          null,
          prev.token,
        ).catch((e) => k.warn(`the earlier decision could not be withdrawn: ${e.message}`));
    };
    const open = () => (d.body ? show(true) : d.addEventListener('DOMContentLoaded', open));

    // Any element with svc-cookie-settings reopens the banner.
    d.addEventListener(
      'click',
      (e) => {
        for (const n of /** @type {Element[]} */ (e.composedPath()))
          if (n.nodeType === 1 && n.hasAttribute('svc-cookie-settings')) {
            e.preventDefault();
            return open();
          }
      },
      true,
    );

    // Nothing runs on a decision withdrawn elsewhere: the stored one counts once this load's
    // status check has said it still stands (docs/widget-status.md).
    void k.stored().then((s) => {
      if (s && s.purposes) apply(s.purposes, s.consentId, 'stored');
      else if (d.body) show();
      else d.addEventListener('DOMContentLoaded', () => show());
    });
    return { open };
  };

  w.SvcCookies = { version: '1', start };
})(window, document);
