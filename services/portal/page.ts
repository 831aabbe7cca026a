import type { Response } from 'express';
import {
  LANGUAGE_INFO,
  fromAcceptLanguage,
  isLanguage,
  uiStrings,
} from '../../shared/i18n/index.js';
import type { Language } from '../../shared/domain/types.js';

/**
 * The portal's HTML, rendered on the server with every value escaped, in one of the 23
 * languages (shared/i18n). The page carries no script or style of its own: both are files
 * under /portal/assets/, so the CSP can forbid inline code entirely; the strings portal.js
 * shows travel in the `data-i18n` attribute of `<main>`.
 */

export const ASSETS_PATH = '/portal/assets';

/**
 * Nothing but same-origin script, style and fetch; no framing, no forms, no base changes.
 * The token sits in the URL fragment, so referrers are withheld and nothing is cached.
 */
export const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'Referrer-Policy': 'no-referrer',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
const esc = (s: string) => s.replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/**
 * The page's language: `?lang=` when it names one of the 23 (the e-mails' links carry the
 * language the principal consented in), else the browser's `Accept-Language`, else English.
 */
export function pageLanguage(query: unknown, acceptLanguage: string | undefined): Language {
  return isLanguage(query) ? query : fromAcceptLanguage(acceptLanguage);
}

function layout(lang: Language, title: string, body: string, withScript: boolean): string {
  const t = uiStrings('portal', lang);
  return `<!doctype html>
<html lang="${lang}" dir="${LANGUAGE_INFO[lang].dir}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(title)}</title>
<link rel="icon" href="${ASSETS_PATH}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${ASSETS_PATH}/portal.css">
${withScript ? `<script src="${ASSETS_PATH}/portal.js" defer></script>\n` : ''}</head>
<body>
<a class="skip" href="#main">${esc(t.skip)}</a>
${body}
</body>
</html>
`;
}

/**
 * The self-service page, the same for every link: the server never sees the token (it is in
 * the URL fragment), so the page holds nothing but the referenceId of its own URL. portal.js
 * reads the token, asks the portal API whose link it is (app name and contact) and fills
 * `#transactions`; a refused token is explained there.
 */
export function portalPage(referenceId: string, lang: Language = 'en'): string {
  const ref = esc(referenceId);
  const t = uiStrings('portal', lang);
  return layout(
    lang,
    t.title,
    `<header>
<p class="app-name" id="app-name"></p>
<h1>${esc(t.title)}</h1>
</header>
<main id="main" tabindex="-1" data-reference-id="${ref}" data-api="/portal/api/${esc(encodeURIComponent(referenceId))}" data-i18n="${esc(JSON.stringify(t))}">
<p id="intro">${esc(t.intro)}</p>
<p class="reference">${esc(t.reference)} <code>${ref}</code></p>
<div id="status" class="status" role="status" aria-live="polite"></div>
<div id="transactions" aria-busy="true"><p>${esc(t.loading)}</p></div>
<noscript><p class="error">${esc(t.noscript)}</p></noscript>
</main>
<footer id="contact"></footer>`,
    true,
  );
}

/** A link of the old form, token in the query string: refused, never read (nor logged). */
export function queryTokenPage(lang: Language = 'en'): string {
  const t = uiStrings('portal', lang);
  return layout(
    lang,
    t.oldLinkTitle,
    `<main id="main" tabindex="-1" class="error-page" data-error="query_token">
<h1>${esc(t.oldLinkTitle)}</h1>
<p>${esc(t.oldLinkText)}</p>
</main>`,
    false,
  );
}

export function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set(PAGE_HEADERS).type('html').send(html);
}
