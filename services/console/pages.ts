import type { ApiKey, App } from '../../shared/domain/types.js';
import type { DispatchWithAttempts } from '../../shared/ledger/queries.js';
import type { AppPage, AppRow } from './data.js';
import { actionForm, copyBlock, csrfField, esc, layout, scrollTable, time } from './html.js';
import type { Session } from './session.js';
import { snippets } from './snippets.js';

/** The console's pages (docs/api.md, Console). Every value is escaped by `esc`. */

export const appPath = (appId: string) => `/console/apps/${encodeURIComponent(appId)}`;

export function signInPage(error?: string): string {
  return layout(
    'Sign in',
    `<h1>Sign in</h1>
<p>Sign in with the operator’s admin token, or with an API key of an app that has the <code>console</code> scope (it shows that app only).</p>
${error ? `<p class="error" role="alert">${esc(error)}</p>` : ''}
<form method="post" action="/console/sign-in" class="stack">
<label for="credential">Admin token or API key</label>
<input id="credential" name="credential" type="password" autocomplete="off" required maxlength="512" spellcheck="false">
<button type="submit">Sign in</button>
</form>`,
  );
}

export function errorPage(title: string, detail: string, s?: Session): string {
  return layout(
    title,
    `<h1>${esc(title)}</h1>
<p role="alert">${esc(detail)}</p>
<p><a href="/console/">Back to the apps</a></p>`,
    s,
  );
}

export const envBadge = (env: string) => `<span class="badge env-${esc(env)}">${esc(env)}</span>`;

export function appListPage(s: Session, rows: AppRow[], next: string | null): string {
  const items = rows
    .map(
      (a) => `<li><a href="${esc(appPath(a.appId))}">${esc(a.name)}</a> ${envBadge(a.environment)}
<span class="meta"><code>${esc(a.appId)}</code> · widget verified ${a.widgetVerifiedAt ? time(a.widgetVerifiedAt) : 'never'}</span></li>`,
    )
    .join('\n');
  const open =
    s.kind === 'admin'
      ? `<form method="get" action="/console/open" class="row">
<label for="open-app">Open an app by id</label>
<input id="open-app" name="appId" pattern="app_[0-9A-Za-z]{20}" placeholder="app_…" required spellcheck="false">
<button type="submit" class="secondary">Open</button>
</form>`
      : '';
  return layout(
    'Apps',
    `<h1>Apps</h1>
${open}
${rows.length ? `<ul class="apps" aria-label="Apps">${items}</ul>` : '<p>No apps yet: create one with <code>POST /api/v1/admin/apps</code>.</p>'}
${next ? `<p><a href="/console/?cursor=${esc(encodeURIComponent(next))}">More apps</a></p>` : ''}`,
    s,
  );
}

const scopeList = (k: Pick<ApiKey, 'scopes'>) =>
  k.scopes.map((x) => `<code>${esc(x)}</code>`).join(' ');

function keysSection(s: Session, app: App, keys: ApiKey[], scopes: readonly string[]): string {
  const base = appPath(app.appId);
  const rows = keys
    .map(
      (k) => `<tr>
<th scope="row">${esc(k.name)}</th>
<td data-label="Scopes">${scopeList(k)}</td>
<td data-label="Created">${time(k.createdAt)}</td>
<td data-label="Status">${k.revokedAt ? `revoked ${time(k.revokedAt)}` : 'active'}</td>
<td class="action">${
        k.revokedAt
          ? ''
          : actionForm(s, `${base}/api-keys/${encodeURIComponent(k.id)}/revoke`, 'Revoke', {
              confirm: `Revoke the API key “${k.name}”? Clients using it stop working at once.`,
              name: `Revoke ${k.name}`,
              cls: 'danger',
            })
      }</td>
</tr>`,
    )
    .join('\n');
  const boxes = scopes
    .map(
      (x) =>
        `<label class="check"><input type="checkbox" name="scopes" value="${esc(x)}"> <code>${esc(x)}</code></label>`,
    )
    .join('\n');
  return `<section aria-labelledby="h-keys">
<h2 id="h-keys">API keys</h2>
${
  keys.length
    ? scrollTable(
        'API keys',
        `<table id="api-keys"><thead><tr><th scope="col">Name</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Status</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead><tbody>${rows}</tbody></table>`,
      )
    : '<p>No API keys yet.</p>'
}
<form method="post" action="${esc(base)}/api-keys" class="stack card">
${csrfField(s)}
<h3>Create an API key</h3>
<label for="key-name">Name</label>
<input id="key-name" name="name" required maxlength="100">
<fieldset><legend>Scopes</legend>
${boxes}
</fieldset>
<button type="submit">Create key</button>
</form>
</section>`;
}

function widgetSection(app: App): string {
  const verified = app.widgetVerifiedAt
    ? `<p id="widget-verified">Last verified ${time(app.widgetVerifiedAt)}${
        app.widgetVerifiedOrigin ? ` from <code>${esc(app.widgetVerifiedOrigin)}</code>` : ''
      }.</p>`
    : `<p id="widget-verified">Not verified yet: load a page with the widget script from an allowed origin.</p>`;
  const origins = app.allowedOrigins.map((o) => `<li><code>${esc(o)}</code></li>`).join('');
  return `<section aria-labelledby="h-widget">
<h2 id="h-widget">Widget script</h2>
${verified}
<p>Allowed origins:</p>
${origins ? `<ul>${origins}</ul>` : '<p>None: the widget works on no page.</p>'}
</section>`;
}

function noticesSection(p: AppPage): string {
  if (!p.notices.length)
    return `<section aria-labelledby="h-notices"><h2 id="h-notices">Notices</h2><p>No notices yet.</p></section>`;
  const anyRegions = p.notices.some((n) => n.regions !== undefined);
  const rows = p.notices
    .map(
      (n) => `<tr>
<th scope="row"><code>${esc(n.triggerKey)}</code></th>
<td data-label="Version">${esc(n.version)}</td>
<td data-label="Kind">${esc(n.kind.replace('_', ' '))}</td>
<td data-label="Languages">${n.languages.map((l) => `<span class="tag" lang="${esc(l)}">${esc(l)}</span>`).join(' ')}</td>
${anyRegions ? `<td data-label="Regions">${n.regions?.length ? n.regions.map((r) => `<span class="tag">${esc(r)}</span>`).join(' ') : 'everywhere'}</td>` : ''}
<td data-label="Changed">${time(n.createdAt)}</td>
</tr>`,
    )
    .join('\n');
  return `<section aria-labelledby="h-notices">
<h2 id="h-notices">Notices</h2>
${scrollTable(
  'Notices',
  `<table id="notices"><thead><tr><th scope="col">Trigger key</th><th scope="col">Version</th><th scope="col">Kind</th><th scope="col">Languages</th>${
    anyRegions ? '<th scope="col">Regions</th>' : ''
  }<th scope="col">Changed</th></tr></thead><tbody>${rows}</tbody></table>`,
)}
</section>`;
}

function healthSection(s: Session, p: AppPage): string {
  const h = p.health;
  const rate = h.attempted
    ? `${h.delivered} of ${h.attempted} recent dispatches delivered (${Math.round((100 * h.delivered) / h.attempted)}%)`
    : 'No delivery attempted yet';
  const status = h.disabled
    ? `<strong class="bad">Disabled</strong> since ${time(h.state?.disabledAt)} (${esc(
        h.state?.disabledReason === 'gone' ? 'it answered 410 Gone' : 'no success for too long',
      )})`
    : h.state?.failingSince && h.state.url === h.url
      ? `<strong class="warn">Failing</strong> since ${time(h.state.failingSince)}`
      : '<strong class="good">Enabled</strong>';
  const current = h.state?.url === h.url ? h.state : undefined;
  return `<section aria-labelledby="h-health">
<h2 id="h-health">Webhook endpoint</h2>
<dl class="facts" id="endpoint-health">
<dt>URL</dt><dd><code>${esc(h.url)}</code></dd>
<dt>State</dt><dd>${status}</dd>
<dt>Success rate</dt><dd>${esc(rate)}</dd>
<dt>Last success</dt><dd>${time(current?.lastSuccessAt)}</dd>
<dt>Last error</dt><dd>${
    h.lastError
      ? `${esc(h.lastError.what)} at ${time(h.lastError.at)} (<a href="${esc(
          `${appPath(p.app.appId)}/dispatches/${h.lastError.dispatchId}`,
        )}">dispatch</a>)`
      : '—'
  }</dd>
</dl>
${
  h.disabled
    ? `<p>The endpoint is enabled again by the next delivery that succeeds. Re-enable resends the newest dispatch now, outside the retry schedule.</p>
${actionForm(s, `${appPath(p.app.appId)}/endpoint/re-enable`, 'Re-enable: resend the newest dispatch')}`
    : ''
}
</section>`;
}

export const flagBadge = (flag: string | null | undefined) =>
  flag ? `<span class="badge flag-${esc(flag)}">${esc(flag.replace('_', ' '))}</span>` : '—';

function dispatchesSection(p: AppPage): string {
  if (!p.dispatches.length)
    return `<section aria-labelledby="h-dispatches"><h2 id="h-dispatches">Recent dispatches</h2><p>No dispatches yet.</p></section>`;
  const rows = p.dispatches
    .map((d) => {
      const worst = (d as { worstFlag?: string | null }).worstFlag;
      return `<tr>
<th scope="row"><a href="${esc(`${appPath(p.app.appId)}/dispatches/${d.dispatchId}`)}">${esc(d.event)}</a></th>
<td data-label="Reference"><code>${esc(d.referenceId)}</code></td>
<td data-label="Created">${time(d.createdAt)}</td>
<td data-label="Delivery (attempts)">${esc(d.deliveryStatus)} (${esc(d.attemptCount)})</td>
<td data-label="Flag">${flagBadge(d.complianceFlag)}${worst && worst !== d.complianceFlag ? ` <span class="meta">worst ${flagBadge(worst)}</span>` : ''}</td>
</tr>`;
    })
    .join('\n');
  return `<section aria-labelledby="h-dispatches">
<h2 id="h-dispatches">Recent dispatches</h2>
${scrollTable(
  'Recent dispatches',
  `<table id="dispatches"><thead><tr><th scope="col">Event</th><th scope="col">Reference</th><th scope="col">Created</th><th scope="col">Delivery (attempts)</th><th scope="col">Flag</th></tr></thead><tbody>${rows}</tbody></table>`,
)}
</section>`;
}

export function appPage(
  s: Session,
  p: AppPage,
  o: {
    baseUrl: string;
    scopes: readonly string[];
    /** The go-live checklist and the sandbox tools' section (tools-pages.ts). */
    tools: string;
    notice?: string;
  },
): string {
  const app = p.app;
  const base = appPath(app.appId);
  return layout(
    app.name,
    `<p class="crumbs"><a href="/console/">Apps</a> /</p>
<h1>${esc(app.name)} ${envBadge(app.environment)}</h1>
<p class="meta"><code>${esc(app.appId)}</code> · contact ${esc(app.contactEmail)}</p>
<p class="row jump"><a href="#checklist">Go-live checklist</a>${
      app.environment === 'sandbox' ? ` <a href="${esc(`${base}/sandbox`)}">Sandbox tools</a>` : ''
    }</p>
${o.notice ? `<p class="notice" role="status">${esc(o.notice)}</p>` : ''}
<section aria-labelledby="h-credentials">
<h2 id="h-credentials">Keys</h2>
<dl class="facts">
<dt>Site key</dt><dd><code id="site-key">${esc(app.siteKey)}</code> <button type="button" class="small" data-copy="site-key" aria-label="Copy the site key" hidden>Copy</button></dd>
<dt>Secret key</dt><dd><code id="secret-masked">${esc(p.maskedSecret)}</code> (shown once, when created or rotated)</dd>
</dl>
${actionForm(s, `${base}/secret/rotate`, 'Rotate the secret key', {
  confirm:
    'Rotate the secret key? The old one stops working at once, and webhooks are signed with the new one.',
  cls: 'danger',
})}
</section>
${widgetSection(app)}
${keysSection(s, app, p.keys, o.scopes)}
${noticesSection(p)}
${healthSection(s, p)}
${dispatchesSection(p)}
<section aria-labelledby="h-snippets">
<h2 id="h-snippets">Snippets</h2>
${snippets(app, o.baseUrl)
  .map((x) => copyBlock(x.id, x.label, x.text))
  .join('\n')}
</section>
${o.tools}`,
    s,
  );
}

/** A credential shown once: after a rotation or a key's creation. */
export function shownOncePage(
  s: Session,
  app: App,
  o: { title: string; label: string; value: string; extra?: string },
): string {
  return layout(
    o.title,
    `<p class="crumbs"><a href="/console/">Apps</a> / <a href="${esc(appPath(app.appId))}">${esc(app.name)}</a> /</p>
<h1>${esc(o.title)}</h1>
<p class="notice" role="status">Copy it now: it is shown only this once.</p>
${o.extra ?? ''}
${copyBlock('shown-once', o.label, o.value)}
<p><a href="${esc(appPath(app.appId))}">Back to ${esc(app.name)}</a></p>`,
    s,
  );
}

/** A dispatch's postbacks as table rows (received, status, risk, remark). */
export const postbackRows = (d: Pick<DispatchWithAttempts, 'postbacks'>) =>
  d.postbacks
    .map(
      (pb) =>
        `<tr><th scope="row" data-label="Received">${time(pb.receivedAt)}</th><td data-label="Status">${esc(pb.status)}</td><td data-label="Risk">${esc(pb.risk)}</td><td data-label="Remark">${esc(pb.remark ?? '')}</td></tr>`,
    )
    .join('');

export function dispatchPage(
  s: Session,
  app: App,
  d: DispatchWithAttempts,
  chain: { ok: boolean; detail: string },
): string {
  const attempts = d.attempts
    .map(
      (a) =>
        `<tr><th scope="row" data-label="Attempt">${esc(a.attempt)}</th><td data-label="Trigger">${esc(a.trigger)}</td><td data-label="Time">${time(a.time)}</td><td data-label="Outcome">${esc(
          a.outcome,
        )}</td><td data-label="Status">${a.statusCode ?? '—'}</td><td data-label="Error">${esc(a.errorClass ?? '—')}</td><td data-label="Duration">${esc(a.durationMs)} ms</td></tr>`,
    )
    .join('');
  const postbacks = postbackRows(d);
  const flags = d.flagHistory
    .map(
      (f) =>
        `<tr><th scope="row" data-label="At">${time(f.at)}</th><td data-label="Flag">${flagBadge(f.flag)}</td><td data-label="Cause">${esc(f.cause)}</td></tr>`,
    )
    .join('');
  return layout(
    `Dispatch ${d.dispatchId}`,
    `<p class="crumbs"><a href="/console/">Apps</a> / <a href="${esc(appPath(app.appId))}">${esc(app.name)}</a> /</p>
<h1>Dispatch <code>${esc(d.dispatchId)}</code></h1>
<dl class="facts" id="dispatch">
<dt>Event</dt><dd>${esc(d.event)} (<code>${esc(d.eventId)}</code>)</dd>
<dt>Reference</dt><dd><code>${esc(d.referenceId)}</code></dd>
<dt>Created</dt><dd>${time(d.createdAt)}</dd>
<dt>Delivery</dt><dd>${esc(d.deliveryStatus)}, ${esc(d.attemptCount)} attempt(s), delivered ${time(d.deliveredAt)}</dd>
<dt>Postback</dt><dd>${d.postbackRequired ? `due ${time(d.postbackDueAt)}` : 'not needed'}</dd>
<dt>Flag</dt><dd>${flagBadge(d.complianceFlag)}</dd>
<dt>Hash chain</dt><dd id="chain" class="${chain.ok ? 'good' : 'bad'}">${esc(chain.detail)}</dd>
<dt>Head hash</dt><dd><code class="wrap">${esc(d.headHash)}</code></dd>
</dl>
<section aria-labelledby="h-attempts"><h2 id="h-attempts">Attempts</h2>
${attempts ? scrollTable('Attempts', `<table id="attempts"><thead><tr><th scope="col">#</th><th scope="col">Trigger</th><th scope="col">Time</th><th scope="col">Outcome</th><th scope="col">Status</th><th scope="col">Error</th><th scope="col">Duration</th></tr></thead><tbody>${attempts}</tbody></table>`) : '<p>None yet.</p>'}
</section>
<section aria-labelledby="h-postbacks"><h2 id="h-postbacks">Postbacks</h2>
${postbacks ? scrollTable('Postbacks', `<table><thead><tr><th scope="col">Received</th><th scope="col">Status</th><th scope="col">Risk</th><th scope="col">Remark</th></tr></thead><tbody>${postbacks}</tbody></table>`) : '<p>None.</p>'}
</section>
<section aria-labelledby="h-flags"><h2 id="h-flags">Flag history</h2>
${flags ? scrollTable('Flag history', `<table><thead><tr><th scope="col">At</th><th scope="col">Flag</th><th scope="col">Cause</th></tr></thead><tbody>${flags}</tbody></table>`) : '<p>No flag changes.</p>'}
</section>`,
    s,
  );
}
