import type { Response } from 'express';
import type { Session } from './session.js';

/**
 * The console's HTML frame, rendered on the server with every value escaped. Pages carry no
 * script or style of their own: both are files under /console/assets/, so the policy below
 * forbids inline code entirely.
 */

export const ASSETS_PATH = '/console/assets';

/** Same-origin everything; no inline code, no framing, forms post only here. */
export const PAGE_HEADERS: Record<string, string> = {
  'Content-Security-Policy':
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'Referrer-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  // Pages may show a credential once: never keep them.
  'Cache-Control': 'no-store',
};

const ESCAPES: Record<string, string> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};
export const esc = (s: string | number) => String(s).replace(/[&<>"']/g, (c) => ESCAPES[c]!);

/** `2026-11-25 10:46:36 UTC` inside a <time> element. */
export function time(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return esc(iso);
  const text = `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
  return `<time datetime="${esc(d.toISOString())}">${text}</time>`;
}

/** The hidden CSRF field every state-changing form carries. */
export const csrfField = (s: Session) =>
  `<input type="hidden" name="_csrf" value="${esc(s.csrf)}">`;

/** A POST form holding one button (with an optional confirmation the script asks for). */
export function actionForm(
  s: Session,
  action: string,
  label: string,
  o: { confirm?: string; cls?: string; name?: string } = {},
): string {
  return `<form method="post" action="${esc(action)}" class="inline"${
    o.confirm ? ` data-confirm="${esc(o.confirm)}"` : ''
  }>${csrfField(s)}<button type="submit"${o.cls ? ` class="${esc(o.cls)}"` : ''}${
    o.name ? ` aria-label="${esc(o.name)}"` : ''
  }>${esc(label)}</button></form>`;
}

/** A block of text to copy: the script reveals its button. */
export function copyBlock(id: string, label: string, text: string): string {
  return `<div class="copy">
<div class="copy-head"><span id="${esc(id)}-label">${esc(label)}</span><button type="button" class="small" data-copy="${esc(id)}" aria-label="Copy: ${esc(label)}" hidden>Copy</button></div>
<pre id="${esc(id)}" tabindex="0" aria-labelledby="${esc(id)}-label"><code>${esc(text)}</code></pre>
</div>`;
}

/** A table that scrolls on its own on a narrow screen (focusable, so keys can scroll it). */
export const scrollTable = (label: string, table: string) =>
  `<div class="scroll" role="region" aria-label="${esc(label)}" tabindex="0">${table}</div>`;

function header(s: Session | undefined): string {
  if (!s) return `<header class="top"><span class="brand">svc-consent console</span></header>`;
  const who = s.kind === 'admin' ? 'Operator' : `API key “${esc(s.apiKeyName)}”`;
  return `<header class="top">
<a class="brand" href="/console/">svc-consent console</a>
<span class="who">Signed in: ${who}</span>
${actionForm(s, '/console/sign-out', 'Sign out', { cls: 'secondary' })}
</header>`;
}

export function layout(title: string, body: string, s?: Session): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(title)} · svc-consent console</title>
<link rel="icon" href="${ASSETS_PATH}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${ASSETS_PATH}/console.css">
<script src="${ASSETS_PATH}/console.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
${header(s)}
<main id="main" tabindex="-1">
${body}
</main>
<div id="live" class="visually-hidden" role="status" aria-live="polite"></div>
</body>
</html>
`;
}

export function sendPage(res: Response, status: number, html: string): void {
  res.status(status).set(PAGE_HEADERS).type('html').send(html);
}
