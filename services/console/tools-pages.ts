import { FLAGS, POSTBACK_RISKS, POSTBACK_STATUSES } from '../../shared/domain/compliance/flags.js';
import {
  attestability,
  failingCritical,
  satisfied,
  type Checklist,
  type ChecklistArea,
  type ChecklistItem,
  type TestEventObservation,
} from '../../shared/domain/checklist.js';
import { EVENT_TYPES } from '../../shared/domain/consent/events.js';
import {
  INBOX_SLOTS,
  INBOX_UNSIGNED_SLOTS,
  type InboxDelivery,
} from '../../shared/domain/observations.js';
import type { App } from '../../shared/domain/types.js';
import type { FieldError } from '../../shared/errors.js';
import type { Dispatch } from '../../shared/storage/ledger/dispatches.js';
import type { DispatchWithAttempts } from '../../shared/ledger/queries.js';
import { copyBlock, csrfField, esc, layout, scrollTable, time } from './html.js';
import { appPath, envBadge, flagBadge, postbackRows } from './pages.js';
import { principalOf, type Session } from './session.js';

/**
 * The console's go-live checklist (on the app's page), its go-live answers, and the sandbox
 * tools page (docs/api.md, Console). Every value is escaped by `esc`.
 */

export const AREA_LABELS: Record<ChecklistArea, string> = {
  consent_collection: 'Consent collection and notice',
  webhook_delivery: 'Webhook security and delivery',
  postback_sla: 'Postback compliance (SLA)',
  processing_controls: 'Data processing controls',
  principal_rights: 'Principal rights',
  key_management: 'Security and key management',
  audit_trail: 'Monitoring and audit trail',
};

/** What the app records about its twin (`liveAppId` on a sandbox app, `sandboxAppId` on a live one). */
const twinOf = (app: App) => {
  const a = app as App & { liveAppId?: string; sandboxAppId?: string; goLiveBy?: string };
  return { live: a.liveAppId, sandbox: a.sandboxAppId, by: a.goLiveBy };
};

/** A link to another app's page, for the operator; its id alone for an API-key session. */
const appLink = (s: Session, appId: string) =>
  s.kind === 'admin'
    ? `<a href="${esc(appPath(appId))}"><code>${esc(appId)}</code></a>`
    : `<code>${esc(appId)}</code>`;

function attestForm(s: Session, app: App, item: ChecklistItem): string {
  const id = esc(item.id);
  return `<form method="post" action="${esc(`${appPath(app.appId)}/checklist/${encodeURIComponent(item.id)}/attest`)}" class="stack attest">
${csrfField(s)}
<label for="note-${id}">Attest as ${esc(principalOf(s))}: what you checked</label>
<textarea id="note-${id}" name="note" required maxlength="2000" rows="2"></textarea>
<button type="submit" class="secondary" aria-label="Attest: ${esc(item.title)}">Attest</button>
</form>`;
}

function itemHtml(s: Session, app: App, item: ChecklistItem): string {
  const attestable = attestability(item.id) === 'attestable';
  return `<li class="item st-${esc(item.status)}" id="item-${esc(item.id)}">
<p class="item-head"><span class="badge sev-${esc(item.severity)}">${esc(item.severity)}</span> <span class="badge status-${esc(item.status)}">${esc(item.status)}</span> <strong>${esc(item.title)}</strong></p>
<p class="evidence"><span class="label">Evidence:</span> ${esc(item.evidence)}</p>
<p class="fix"><span class="label">How to fix:</span> ${esc(item.howToFix)}</p>
${attestable && !satisfied(item) ? attestForm(s, app, item) : ''}
</li>`;
}

function goLiveBlock(s: Session, app: App, c: Checklist): string {
  const twin = twinOf(app);
  if (app.environment === 'live')
    return `<p id="go-live-state">A live app${
      twin.sandbox ? `, the live twin of the sandbox app ${appLink(s, twin.sandbox)}` : ''
    }${app.goLiveAt ? `; it went live ${time(app.goLiveAt)}${twin.by ? ` (${esc(twin.by)})` : ''}` : ''}.</p>`;
  if (app.goLiveAt)
    return `<p id="go-live-state" class="good">Went live ${time(app.goLiveAt)}${
      twin.by ? ` (${esc(twin.by)})` : ''
    }${twin.live ? `: the live app is ${appLink(s, twin.live)}` : ''}.</p>`;
  const left = failingCritical(c).length;
  return `<form method="post" action="${esc(`${appPath(app.appId)}/go-live`)}" class="stack card" id="go-live"${
    c.canGoLive
      ? ' data-confirm="Create the live app now? It gets its own keys; its secret key is shown once."'
      : ''
  }>
${csrfField(s)}
<h3>Go live</h3>
<p>${
    c.canGoLive
      ? 'Every critical item is passed or attested.'
      : `${left} critical item(s) are not satisfied yet: going live is refused until they are.`
  } Going live creates the live twin of this app: its own app id, site key and secret key (shown once), this app’s notices and allowed origins, and no API keys.</p>
<label for="live-webhook-url">Live webhook URL (https)</label>
<input id="live-webhook-url" name="webhookUrl" type="url" inputmode="url" required maxlength="2000" placeholder="https://…" spellcheck="false">
<button type="submit">Go live</button>
</form>`;
}

/** The checklist on the app's page: seven areas in order, then go-live (or what it created). */
export function checklistSection(s: Session, app: App, c: Checklist): string {
  const items = c.areas.flatMap((a) => a.items);
  const failing = failingCritical(c);
  const done = items.filter(satisfied).length;
  const summary = failing.length
    ? `<p id="checklist-summary" class="warn">${done} of ${items.length} items passed or attested. ${failing.length} critical item(s) stop the go-live: ${failing
        .map((i) => `<a href="#item-${esc(i.id)}">${esc(i.id)}</a>`)
        .join(', ')}.</p>`
    : `<p id="checklist-summary" class="good">${done} of ${items.length} items passed or attested; every critical item is satisfied.</p>`;
  const areas = c.areas
    .map(
      (a, i) => `<h3 id="area-${esc(a.area)}">${i + 1}. ${esc(AREA_LABELS[a.area])}</h3>
<ul class="checklist" aria-labelledby="area-${esc(a.area)}">
${a.items.map((item) => itemHtml(s, app, item)).join('\n')}
</ul>`,
    )
    .join('\n');
  return `<section aria-labelledby="h-checklist" id="checklist">
<h2 id="h-checklist">Go-live checklist</h2>
${summary}
${areas}
${goLiveBlock(s, app, c)}
</section>`;
}

/** The app page's pointer to the sandbox tools (sandbox apps only). */
export function sandboxLinkSection(app: App): string {
  if (app.environment !== 'sandbox') return '';
  return `<section aria-labelledby="h-sandbox" id="sandbox">
<h2 id="h-sandbox">Sandbox tools</h2>
<p>The webhook inbox, test events of every type (signed or mis-signed) and the postback simulator: <a href="${esc(`${appPath(app.appId)}/sandbox`)}">open the sandbox tools</a>.</p>
</section>`;
}

/** The answer to a refused go-live: each failing critical item the refusal named. */
export function goLiveRefusedPage(
  s: Session,
  app: App,
  refusal: { message: string; errors: FieldError[] },
): string {
  const base = appPath(app.appId);
  const rows = refusal.errors
    .map((e) => {
      const id = e.path.replace(/^\/checklist\//, '');
      return `<li><a href="${esc(`${base}#item-${id}`)}"><code>${esc(id)}</code></a>: ${esc(e.message)}</li>`;
    })
    .join('\n');
  return layout(
    'Not ready to go live',
    `<p class="crumbs"><a href="/console/">Apps</a> / <a href="${esc(base)}">${esc(app.name)}</a> /</p>
<h1>Not ready to go live</h1>
<p role="alert" id="go-live-refused-summary">${esc(refusal.message)}.</p>
<ul id="go-live-refused">
${rows}
</ul>
<p><a href="${esc(`${base}#checklist`)}">Back to the checklist</a></p>`,
    s,
  );
}

/** What a go-live created, shown once (the live app's secret key is in no other answer). */
export function wentLiveExtra(s: Session, live: App, noticesCopied: number): string {
  return `<dl class="facts" id="live-app">
<dt>Live app</dt><dd>${appLink(s, live.appId)} ${envBadge(live.environment)}</dd>
<dt>Site key</dt><dd><code id="live-site-key">${esc(live.siteKey)}</code></dd>
<dt>Webhook URL</dt><dd><code>${esc(live.webhookUrl)}</code></dd>
<dt>Notices copied</dt><dd>${esc(noticesCopied)}</dd>
</dl>
<p>The live app has no API keys yet${
    s.kind === 'admin'
      ? ': create them on its page.'
      : ': ask the operator for one with the <code>console</code> scope to see it here.'
  }</p>`;
}

export interface SandboxView {
  inboxUrl: string;
  inbox: InboxDelivery[];
  lastTests: { signed?: TestEventObservation | undefined; bad?: TestEventObservation | undefined };
  /** Recent dispatches that need a postback, newest first. */
  dispatches: Dispatch[];
  /** The dispatch the simulator just posted back for, read from the ledger. */
  simulated?: { dispatch: DispatchWithAttempts; postbackId: string | undefined } | undefined;
  /** The event type the test-event form starts on (the one just sent). */
  selectedType?: string | undefined;
  /** A notice of what was just done (HTML: built from escaped values only). */
  noticeHtml?: string | undefined;
}

function describeTest(o: TestEventObservation | undefined, what: string): string {
  if (!o) return `No ${what} test event sent yet.`;
  const answer = o.status !== null ? `HTTP ${o.status}` : `no answer (${o.errorClass ?? 'error'})`;
  return `${what[0]!.toUpperCase()}${what.slice(1)}: ${o.type} ${time(o.at)} to <code>${esc(o.url)}</code>: ${esc(answer)} in ${esc(o.durationMs)} ms`;
}

function webhookSection(s: Session, app: App, v: SandboxView): string {
  const base = appPath(app.appId);
  const onInbox = app.webhookUrl === v.inboxUrl;
  return `<section aria-labelledby="h-webhook" id="webhook">
<h2 id="h-webhook">Webhook URL</h2>
<p>Webhooks and test events go to <code id="webhook-url">${esc(app.webhookUrl)}</code>${
    onInbox ? ': this app’s sandbox inbox (below).' : '.'
  }</p>
${
  onInbox
    ? ''
    : `<form method="post" action="${esc(`${base}/sandbox/webhook-url`)}" class="row">${csrfField(s)}<input type="hidden" name="webhookUrl" value="${esc(v.inboxUrl)}"><button type="submit" class="secondary">Use the sandbox inbox</button></form>`
}
<form method="post" action="${esc(`${base}/sandbox/webhook-url`)}" class="stack">
${csrfField(s)}
<label for="webhook-url-input">Your endpoint’s URL</label>
<input id="webhook-url-input" name="webhookUrl" type="url" inputmode="url" required maxlength="2000" value="${onInbox ? '' : esc(app.webhookUrl)}" placeholder="https://…" spellcheck="false">
<button type="submit">Save the webhook URL</button>
</form>
<p class="meta">Test events sent to the inbox do not pass the checklist’s webhook items: the inbox stands in for your server and proves nothing of it.</p>
</section>`;
}

const option = (value: string, label: string, selected: boolean) =>
  `<option value="${esc(value)}"${selected ? ' selected' : ''}>${esc(label)}</option>`;

function testEventSection(s: Session, app: App, v: SandboxView): string {
  const options = EVENT_TYPES.map((t) => option(t, t, t === v.selectedType)).join('');
  return `<section aria-labelledby="h-test-events" id="test-events">
<h2 id="h-test-events">Send a test event</h2>
<p>One event of the chosen type, sent now to the webhook URL, signed with this app’s secret key, or mis-signed (a random key): an endpoint that verifies signatures must refuse that one.</p>
<form method="post" action="${esc(`${appPath(app.appId)}/sandbox/test-events`)}" class="row">
${csrfField(s)}
<label for="test-event-type">Event type</label>
<select id="test-event-type" name="type">${options}</select>
<button type="submit" name="variant" value="signed">Send signed</button>
<button type="submit" name="variant" value="mis-signed" class="secondary">Send mis-signed</button>
</form>
<ul id="test-outcomes">
<li id="last-signed">${describeTest(v.lastTests.signed, 'last signed')}</li>
<li id="last-mis-signed">${describeTest(v.lastTests.bad, 'last mis-signed')}</li>
</ul>
</section>`;
}

function simulatedResult(app: App, sim: NonNullable<SandboxView['simulated']>): string {
  const d = sim.dispatch;
  const applied = sim.postbackId ? d.postbacks.some((p) => p.postbackId === sim.postbackId) : true;
  const postbacks = postbackRows(d);
  const history = d.flagHistory
    .map((f) => `${flagBadge(f.flag)} <span class="meta">${time(f.at)}</span>`)
    .join(' → ');
  return `<div class="card" id="simulated" role="status">
<h3>Dispatch <a href="${esc(`${appPath(app.appId)}/dispatches/${d.dispatchId}`)}"><code>${esc(d.dispatchId)}</code></a> (${esc(d.event)})</h3>
<p>Flag: <span id="simulated-flag">${flagBadge(d.complianceFlag)}</span>${
    applied
      ? ''
      : ' <span class="warn">The compliance worker has not applied the postback yet: reload to see the flag it results in.</span>'
  }</p>
<p>Flag history: ${history || 'no flag yet'}</p>
${postbacks ? scrollTable('Postbacks of the dispatch', `<table><thead><tr><th scope="col">Received</th><th scope="col">Status</th><th scope="col">Risk</th><th scope="col">Remark</th></tr></thead><tbody>${postbacks}</tbody></table>`) : ''}
</div>`;
}

function simulatorSection(s: Session, app: App, v: SandboxView): string {
  const chosen = v.simulated?.dispatch.dispatchId;
  const form = v.dispatches.length
    ? `<form method="post" action="${esc(`${appPath(app.appId)}/sandbox/postbacks`)}" class="stack">
${csrfField(s)}
<label for="sim-dispatch">Dispatch</label>
<select id="sim-dispatch" name="dispatchId" required>${v.dispatches
        .map((d) =>
          option(
            d.dispatchId,
            `${d.event} · ${d.referenceId} · ${d.createdAt.slice(0, 19).replace('T', ' ')} UTC · flag ${d.complianceFlag ?? 'none'}`,
            d.dispatchId === chosen,
          ),
        )
        .join('')}</select>
<label for="sim-status">Status</label>
<select id="sim-status" name="status">${POSTBACK_STATUSES.map((x) => option(x, x, false)).join('')}</select>
<label for="sim-risk">Risk</label>
<select id="sim-risk" name="risk">${POSTBACK_RISKS.map((x) => option(x, x, false)).join('')}</select>
<label for="sim-remark">Remark (needed for a failed status)</label>
<input id="sim-remark" name="remark" maxlength="2000">
<button type="submit">Send the postback</button>
</form>`
    : '<p>No dispatch of this app needs a postback yet: a consent withdrawn or expired, or data deleted, makes one.</p>';
  return `<section aria-labelledby="h-simulator" id="simulator">
<h2 id="h-simulator">Postback simulator</h2>
<p>Posts back for one of this app’s dispatches with the chosen status and risk, through the postback API’s own checks, and shows the flag that results (${FLAGS.map((f) => `<code>${esc(f)}</code>`).join(', ')}).</p>
${v.simulated ? simulatedResult(app, v.simulated) : ''}
${form}
</section>`;
}

/** A body as sent, indented when it is JSON. */
function prettyBody(body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2);
  } catch {
    return body;
  }
}

/**
 * Characters of a body the page shows: webhook bodies are far smaller, and anyone may post to
 * an inbox, so a hundred bodies of 64 KiB do not make the page megabytes long.
 */
export const BODY_SHOWN = 4_096;

function shownBody(body: string): string {
  const text = prettyBody(body);
  return text.length <= BODY_SHOWN
    ? text
    : `${text.slice(0, BODY_SHOWN)}\n… ${text.length - BODY_SHOWN} more characters (GET /api/v1/admin/apps/{appId}/sandbox/inbox returns the whole body)`;
}

function deliveryHtml(d: InboxDelivery, first: boolean): string {
  const headers = Object.entries(d.headers)
    .map(([k, v]) => `<dt><code>${esc(k)}</code></dt><dd><code>${esc(v)}</code></dd>`)
    .join('');
  const sig = d.signatureValid
    ? '<span class="badge sig-valid">signature valid</span>'
    : '<span class="badge sig-invalid">signature does not verify</span>';
  const what = d.headers['x-svc-event'] ?? 'unknown event';
  const test = d.headers['x-svc-test-event'] === 'true' ? ' · test event' : '';
  return `<li class="delivery" id="delivery-${esc(d.seq)}">
<details${first ? ' open' : ''}>
<summary>#${esc(d.seq)} · ${esc(what)}${esc(test)} · ${time(d.receivedAt)} · ${sig}</summary>
<p class="label">Headers</p>
<dl class="facts headers">${headers}</dl>
<p class="label">Body</p>
<pre tabindex="0"><code>${esc(shownBody(d.body))}</code></pre>
</details>
</li>`;
}

function inboxSection(app: App, v: SandboxView): string {
  return `<section aria-labelledby="h-inbox" id="inbox">
<h2 id="h-inbox">Webhook inbox</h2>
${copyBlock('inbox-url', 'This app’s inbox URL', v.inboxUrl)}
<p>Every delivery to it is kept (the newest ${INBOX_SLOTS} that verify and ${INBOX_UNSIGNED_SLOTS} that do not), newest first, with its headers, its body and whether its signature verifies with this app’s current secret key; one that does not is answered 401. <a href="${esc(`${appPath(app.appId)}/sandbox#inbox`)}">Reload</a></p>
${
  v.inbox.length
    ? `<ul class="inbox" id="inbox-list">${v.inbox.map((d, i) => deliveryHtml(d, i === 0)).join('\n')}</ul>`
    : '<p id="inbox-empty">Nothing received yet.</p>'
}
</section>`;
}

export function sandboxPage(s: Session, app: App, v: SandboxView): string {
  const base = appPath(app.appId);
  return layout(
    `Sandbox tools · ${app.name}`,
    `<p class="crumbs"><a href="/console/">Apps</a> / <a href="${esc(base)}">${esc(app.name)}</a> /</p>
<h1>Sandbox tools ${envBadge(app.environment)}</h1>
<p class="meta"><code>${esc(app.appId)}</code> · <a href="${esc(`${base}#checklist`)}">the go-live checklist</a></p>
${v.noticeHtml ? `<p class="notice" role="status" id="done">${v.noticeHtml}</p>` : ''}
${webhookSection(s, app, v)}
${testEventSection(s, app, v)}
${simulatorSection(s, app, v)}
${inboxSection(app, v)}`,
    s,
  );
}

/** The sandbox page's notice (HTML) after a test event: its outcome, as stored. */
export function testEventNotice(o: TestEventObservation | undefined, bad: boolean): string {
  if (!o) return 'The test event was sent.';
  return `Sent. ${describeTest(o, bad ? 'mis-signed' : 'signed')}.`;
}
