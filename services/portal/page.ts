import type { Response } from 'express';
import type { App } from '../../shared/domain/types.js';

/**
 * The portal's HTML, rendered on the server with every value escaped. The page carries no
 * script or style of its own: both are files under /portal/assets/, so the CSP can forbid
 * inline code entirely.
 */

export const ASSETS_PATH = '/portal/assets';

/**
 * Nothing but same-origin script, style and fetch; no framing, no forms, no base changes.
 * The token sits in the URL, so referrers are withheld and nothing is cached.
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

function contact(app: Pick<App, 'name' | 'contactEmail'>): string {
  const mail = esc(app.contactEmail);
  return `<footer>
<p>Questions about your data, or a grievance? Contact ${esc(app.name)} at <a href="mailto:${mail}">${mail}</a>.
If your grievance is not resolved, you may complain to the Data Protection Board of India.</p>
</footer>`;
}

/** The self-service page; portal.js fills `#transactions` from the portal API. */
export function portalPage(app: Pick<App, 'name' | 'contactEmail'>, referenceId: string): string {
  const ref = esc(referenceId);
  return layout(
    `Manage your consent – ${app.name}`,
    `<header>
<p class="app-name">${esc(app.name)}</p>
<h1>Manage your consent</h1>
</header>
<main id="main" tabindex="-1" data-reference-id="${ref}" data-api="/portal/api/${esc(encodeURIComponent(referenceId))}">
<p>These are the consents you gave to ${esc(app.name)}. You can give, withdraw or erase each of them, for every purpose at once or one purpose at a time. Withdrawing is as easy as giving.</p>
<p class="reference">Your reference: <code>${ref}</code></p>
<div id="status" class="status" role="status" aria-live="polite"></div>
<div id="transactions" aria-busy="true"><p>Loading your consents…</p></div>
<noscript><p class="error">This page needs JavaScript to show and change your consents.</p></noscript>
</main>
${contact(app)}`,
    true,
  );
}

export type PortalFailure = 'missing' | 'expired' | 'forged' | 'mismatch' | 'unknown_app';

const FAILURES: Record<PortalFailure, { status: 401 | 403; title: string; text: string }> = {
  missing: {
    status: 401,
    title: 'This link is incomplete',
    text: 'Open the “Manage consent” link from your e-mail exactly as it was sent; part of it is missing.',
  },
  expired: {
    status: 401,
    title: 'This link has expired',
    text: 'For your protection, links to manage your consent work for a limited time. Use the link in a more recent e-mail, or ask the organisation that wrote to you for a new one.',
  },
  forged: {
    status: 403,
    title: 'This link is not valid',
    text: 'The link was changed or is not one we issued. Use the “Manage consent” link from your e-mail exactly as it was sent.',
  },
  mismatch: {
    status: 403,
    title: 'This link is not valid',
    text: 'The link belongs to another reference. Use the “Manage consent” link from your own e-mail.',
  },
  unknown_app: {
    status: 403,
    title: 'This link is no longer valid',
    text: 'The organisation this link belongs to is no longer registered with this service.',
  },
};

export function failureStatus(f: PortalFailure): 401 | 403 {
  return FAILURES[f].status;
}

export function errorPage(f: PortalFailure): string {
  const { title, text } = FAILURES[f];
  return layout(
    title,
    `<main id="main" tabindex="-1" class="error-page" data-error="${f}">
<h1>${esc(title)}</h1>
<p>${esc(text)}</p>
</main>`,
    false,
  );
}

export function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set(PAGE_HEADERS).type('html').send(html);
}
