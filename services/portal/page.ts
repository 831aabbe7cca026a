import type { Response } from 'express';

/**
 * The portal's HTML, rendered on the server with every value escaped. The page carries no
 * script or style of its own: both are files under /portal/assets/, so the CSP can forbid
 * inline code entirely.
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

function layout(title: string, body: string, withScript: boolean): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(title)}</title>
<link rel="icon" href="${ASSETS_PATH}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${ASSETS_PATH}/portal.css">
${withScript ? `<script src="${ASSETS_PATH}/portal.js" defer></script>\n` : ''}</head>
<body>
<a class="skip" href="#main">Skip to content</a>
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
export function portalPage(referenceId: string): string {
  const ref = esc(referenceId);
  return layout(
    'Manage your consent',
    `<header>
<p class="app-name" id="app-name"></p>
<h1>Manage your consent</h1>
</header>
<main id="main" tabindex="-1" data-reference-id="${ref}" data-api="/portal/api/${esc(encodeURIComponent(referenceId))}">
<p id="intro">These are the consents you gave. You can give, withdraw or erase each of them, for every purpose at once or one purpose at a time. Withdrawing is as easy as giving.</p>
<p class="reference">Your reference: <code>${ref}</code></p>
<div id="status" class="status" role="status" aria-live="polite"></div>
<div id="transactions" aria-busy="true"><p>Loading your consents…</p></div>
<noscript><p class="error">This page needs JavaScript to show and change your consents.</p></noscript>
</main>
<footer id="contact"></footer>`,
    true,
  );
}

/** A link of the old form, token in the query string: refused, never read (nor logged). */
export function queryTokenPage(): string {
  return layout(
    'This link is no longer accepted',
    `<main id="main" tabindex="-1" class="error-page" data-error="query_token">
<h1>This link is no longer accepted</h1>
<p>For your protection, links to manage your consent now keep their key out of the web address. Use the “Manage consent” link in a more recent e-mail, or ask the organisation that wrote to you for a new one.</p>
</main>`,
    false,
  );
}

export function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set(PAGE_HEADERS).type('html').send(html);
}
