import type { ApiKey, App, NoticeVersion } from './types.js';

/**
 * The compliance checklist (docs/api.md, Compliance checklist and go-live): seven areas of
 * items, each `critical`, `important` or `recommended`. Pure: `evaluateChecklist` turns a
 * snapshot of what the service observed about an app (loaded by shared/apps/checklist.ts) into the
 * checklist, so every rule is table-tested without a store.
 *
 * An item is either observed (the service decides it from what it saw: notices, the widget's
 * config calls, test events, the ledger, keys) or attested (only a person can confirm it, e.g.
 * that processing stops on withdrawal): an attested item is `pending` until someone attests
 * it, then `attested` with who, when and their note as evidence. Observed items cannot be
 * attested.
 */

export const CHECKLIST_AREAS = [
  'consent_collection',
  'webhook_delivery',
  'postback_sla',
  'processing_controls',
  'principal_rights',
  'key_management',
  'audit_trail',
] as const;
export type ChecklistArea = (typeof CHECKLIST_AREAS)[number];

export const SEVERITIES = ['critical', 'important', 'recommended'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const ITEM_STATUSES = ['pass', 'fail', 'attested', 'pending'] as const;
export type ItemStatus = (typeof ITEM_STATUSES)[number];

/** The events whose postback the checklist asks a sandbox app to have sent in time. */
export const POSTBACK_EVENTS = ['consent.withdrawn', 'consent.expired', 'data.deleted'] as const;
export type PostbackEvent = (typeof POSTBACK_EVENTS)[number];

/** The widget must have been seen this recently. */
export const WIDGET_FRESH_MS = 30 * 86_400_000;
/** A secret key never rotated must be younger than this. */
export const SECRET_MAX_AGE_MS = 90 * 86_400_000;

/** The outcome of one test event the sandbox tools sent (observations.ts stores the last of each kind). */
export interface TestEventObservation {
  at: string;
  /** The webhook URL it was sent to: a later change of URL makes it stale. */
  url: string;
  type: string;
  /** The HTTP status, null when there was no answer (connection error, timeout, refused). */
  status: number | null;
  errorClass?: string | undefined;
  durationMs: number;
}

/** One dispatch of a postback-requiring event, with the postbacks the ledger holds for it. */
export interface PostbackObservation {
  dispatchId: string;
  createdAt: string;
  postbackDueAt: string | null;
  complianceFlag: string | null;
  postbacks: { receivedAt: string; status: string }[];
}

export interface Attestation {
  by: string;
  note: string;
  at: string;
}

export interface ChecklistSnapshot {
  app: Pick<
    App,
    | 'appId'
    | 'environment'
    | 'webhookUrl'
    | 'allowedOrigins'
    | 'contactEmail'
    | 'secretVersion'
    | 'createdAt'
    | 'widgetVerifiedAt'
    | 'widgetVerifiedOrigin'
    | 'goLiveAt'
  >;
  /** The latest version of each notice. */
  notices: Pick<NoticeVersion, 'noticeId' | 'version' | 'purposes' | 'translations'>[];
  apiKeys: Pick<ApiKey, 'id' | 'scopes' | 'revokedAt'>[];
  testEvents: {
    signed?: TestEventObservation | undefined;
    badSignature?: TestEventObservation | undefined;
  };
  /** Recent dispatches of each postback-requiring event, newest first. */
  postbacks: Record<PostbackEvent, PostbackObservation[]>;
  /** A recent dispatch the endpoint accepted (any event), if any. */
  delivered?: { dispatchId: string; deliveredAt: string } | undefined;
  /** Attestations by item id. */
  attestations: Record<string, Attestation>;
}

export interface ChecklistItem {
  id: string;
  title: string;
  severity: Severity;
  status: ItemStatus;
  evidence: string;
  howToFix: string;
}

export interface Checklist {
  appId: string;
  environment: App['environment'];
  canGoLive: boolean;
  areas: { area: ChecklistArea; items: ChecklistItem[] }[];
}

type Outcome = { status: 'pass' | 'fail' | 'pending'; evidence: string };

interface ItemDef {
  id: string;
  area: ChecklistArea;
  severity: Severity;
  title: string;
  howToFix: string;
  /** Observed items decide from the snapshot; the others are attested by a person. */
  observe?: (s: ChecklistSnapshot, nowMs: number) => Outcome;
}

const pass = (evidence: string): Outcome => ({ status: 'pass', evidence });
const fail = (evidence: string): Outcome => ({ status: 'fail', evidence });
const is2xx = (status: number | null) => status !== null && status >= 200 && status < 300;
const days = (ms: number) => Math.floor(ms / 86_400_000);

function noticePublished(s: ChecklistSnapshot): Outcome {
  if (s.notices.length === 0) return fail('The app has no notice');
  const complete = s.notices.find(
    (n) =>
      n.purposes.length > 0 &&
      n.purposes.every((p) => p.dataItems.length > 0) &&
      Object.values(n.translations).some((t) => t.title.trim() !== '' && t.body.trim() !== ''),
  );
  if (!complete)
    return fail(
      `${s.notices.length} notice(s), none with a translated text and data items itemised for every purpose`,
    );
  const items = new Set(complete.purposes.flatMap((p) => p.dataItems));
  return pass(
    `${complete.noticeId} v${complete.version}: ${complete.purposes.length} purpose(s), ` +
      `${items.size} data item(s), languages ${Object.keys(complete.translations).join(', ')}`,
  );
}

function widgetVerified(s: ChecklistSnapshot, nowMs: number): Outcome {
  const { widgetVerifiedAt: at, widgetVerifiedOrigin: origin, allowedOrigins } = s.app;
  if (!at) return fail('The widget has never loaded its configuration from an allowlisted origin');
  const age = nowMs - Date.parse(at);
  const from = origin ? ` from ${origin}` : '';
  if (!(age <= WIDGET_FRESH_MS))
    return fail(`Last verified ${at}${from}, ${days(age)} days ago (more than 30)`);
  if (origin && !allowedOrigins.includes(origin))
    return fail(`Last verified ${at} from ${origin}, which is no longer on the allowlist`);
  return pass(`Verified ${at}${from}`);
}

function describeAnswer(o: TestEventObservation): string {
  return o.status !== null ? `HTTP ${o.status}` : `no answer (${o.errorClass ?? 'error'})`;
}

function testEventOutcome(
  o: TestEventObservation | undefined,
  s: ChecklistSnapshot,
  what: string,
): Outcome | undefined {
  if (!o) return fail(`No ${what} test event has been sent`);
  if (o.url !== s.app.webhookUrl)
    return fail(`The last ${what} test event (${o.at}) went to another URL than the current one`);
  // The built-in inbox verifies signatures itself: it proves nothing of the app's own server.
  if (/\/sandbox\/inbox\/[^/]+$/.test(new URL(o.url, 'http://x').pathname))
    return fail(
      `The last ${what} test event (${o.at}) went to the built-in sandbox inbox, which stands in for the app's server; send it to your own endpoint`,
    );
  return undefined;
}

function signedTest(s: ChecklistSnapshot): Outcome {
  const o = s.testEvents.signed;
  const early = testEventOutcome(o, s, 'signed');
  if (early || !o) return early ?? fail('No signed test event has been sent');
  const seen = `A signed ${o.type} test event at ${o.at}: ${describeAnswer(o)} in ${o.durationMs} ms`;
  return is2xx(o.status) ? pass(seen) : fail(seen);
}

function badSignatureTest(s: ChecklistSnapshot): Outcome {
  const o = s.testEvents.badSignature;
  const early = testEventOutcome(o, s, 'mis-signed');
  if (early || !o) return early ?? fail('No mis-signed test event has been sent');
  const seen = `A mis-signed ${o.type} test event at ${o.at}: ${describeAnswer(o)}`;
  if (o.status === null) return fail(`${seen}; the endpoint must answer, with a non-2xx status`);
  if (is2xx(o.status)) return fail(`${seen}: the endpoint accepted it, so it does not verify`);
  return pass(`${seen}: rejected`);
}

/** Statuses of a `data.deleted` postback that confirm the erasure (docs/api.md, Compliance flags). */
const CONFIRMS_ERASURE = new Set(['processed', 'deleted']);

function postbackInTime(event: PostbackEvent) {
  return (s: ChecklistSnapshot, nowMs: number): Outcome => {
    const list = s.postbacks[event];
    if (list.length === 0) return fail(`No ${event} webhook has been dispatched yet`);
    const counts = (p: { status: string }) =>
      event !== 'data.deleted' || CONFIRMS_ERASURE.has(p.status);
    for (const d of list) {
      const due = d.postbackDueAt === null ? NaN : Date.parse(d.postbackDueAt);
      const onTime = d.postbacks.find((p) => counts(p) && Date.parse(p.receivedAt) <= due);
      if (onTime)
        return pass(
          `${d.dispatchId}: ${onTime.status} postback received ${onTime.receivedAt}, due ${d.postbackDueAt}` +
            ` (flag ${d.complianceFlag ?? 'none'})`,
        );
    }
    const waiting = list.find(
      (d) => d.postbacks.length === 0 && d.postbackDueAt && nowMs <= Date.parse(d.postbackDueAt),
    );
    if (waiting)
      return {
        status: 'pending',
        evidence: `${waiting.dispatchId} awaits its postback until ${waiting.postbackDueAt}`,
      };
    const last = list[0]!;
    return fail(
      `${list.length} ${event} dispatch(es), none with a ${
        event === 'data.deleted' ? 'confirming ' : ''
      }postback within its window; latest ${last.dispatchId}, flag ${last.complianceFlag ?? 'none'}`,
    );
  };
}

function secretAge(s: ChecklistSnapshot, nowMs: number): Outcome {
  if (s.app.secretVersion > 1)
    return pass(`Rotated: the secret key is at version ${s.app.secretVersion}`);
  const age = nowMs - Date.parse(s.app.createdAt);
  if (age < SECRET_MAX_AGE_MS)
    return pass(`Never rotated, issued ${s.app.createdAt} (${days(age)} days ago)`);
  return fail(`Never rotated, issued ${s.app.createdAt} (${days(age)} days ago, more than 90)`);
}

function contactEmail(s: ChecklistSnapshot): Outcome {
  const e = s.app.contactEmail.trim();
  return /^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(e)
    ? pass(`Contact e-mail ${e}`)
    : fail('No valid contact e-mail is set');
}

function ledgerKey(s: ChecklistSnapshot): Outcome {
  const k = s.apiKeys.find((x) => x.revokedAt === null && x.scopes.includes('ledger:read'));
  return k ? pass(`API key ${k.id} has ledger:read`) : fail('No unrevoked API key has ledger:read');
}

function delivered(s: ChecklistSnapshot): Outcome {
  return s.delivered
    ? pass(`${s.delivered.dispatchId} delivered ${s.delivered.deliveredAt}, recorded in the ledger`)
    : fail('No webhook delivery is recorded in the ledger yet');
}

const ADMIN = '/api/v1/admin/apps/{appId}';

/** Every item, in area order; the order within an area is the order shown. */
export const CHECKLIST_ITEMS: readonly ItemDef[] = [
  {
    id: 'notice_published',
    area: 'consent_collection',
    severity: 'critical',
    title: 'A notice itemises the data collected for each purpose, in at least one language',
    howToFix: `Create a notice (POST ${ADMIN}/notices) whose purposes each list their dataItems, with a title and body in at least one language.`,
    observe: noticePublished,
  },
  {
    id: 'widget_verified',
    area: 'consent_collection',
    severity: 'critical',
    title: 'The widget was seen on an allowlisted origin within 30 days',
    howToFix:
      'Load a page with the widget script tag from an origin on the app’s allowlist; its configuration call records the time and origin.',
    observe: widgetVerified,
  },
  {
    id: 'notice_rights_links',
    area: 'consent_collection',
    severity: 'important',
    title: 'The consent dialog links the principal’s rights and how to complain',
    howToFix:
      'Set data-portal-url and data-complaint-url on the widget script tag (or show them in the notice text), then attest.',
  },
  {
    id: 'webhook_signed_test',
    area: 'webhook_delivery',
    severity: 'critical',
    title: 'The webhook endpoint answered a signed test event with 2xx',
    howToFix: `Send a test event (POST ${ADMIN}/sandbox/test-events) and answer it with 2xx after verifying its signature.`,
    observe: signedTest,
  },
  {
    id: 'webhook_rejects_bad_signature',
    area: 'webhook_delivery',
    severity: 'critical',
    title: 'The webhook endpoint rejected a test event with a bad signature',
    howToFix: `Send a test event with {"badSignature": true} (POST ${ADMIN}/sandbox/test-events); the endpoint must verify the signature and answer non-2xx.`,
    observe: badSignatureTest,
  },
  {
    id: 'webhook_deduplicates',
    area: 'webhook_delivery',
    severity: 'recommended',
    title: 'The endpoint de-duplicates on webhook-id and answers within 10 s',
    howToFix:
      'Answer 2xx before doing the work and ignore a webhook-id already handled (docs/webhooks.md), then attest.',
  },
  ...POSTBACK_EVENTS.map((event): ItemDef => ({
    id: `postback_${event.replace('.', '_')}`,
    area: 'postback_sla',
    severity: 'critical',
    title: `A ${event} webhook got ${event === 'data.deleted' ? 'a confirming' : 'a'} postback within its window`,
    howToFix: `Cause a ${event} in the sandbox and post back to /api/v1/server/consent/action (or POST ${ADMIN}/sandbox/postbacks) before its due time.`,
    observe: postbackInTime(event),
  })),
  {
    id: 'processing_stops_on_withdrawal',
    area: 'processing_controls',
    severity: 'critical',
    title:
      'Processing for a purpose stops when its consent is withdrawn or expires, and resumes only after a new grant',
    howToFix:
      'Act on consent.withdrawn and consent.expired webhooks in your systems and resume only on consent.granted, then attest.',
  },
  {
    id: 'consent_checked_before_processing',
    area: 'processing_controls',
    severity: 'important',
    title: 'The app checks the consent state before each processing purpose',
    howToFix:
      'Read the record API (GET /api/v1/consents/{userId}) or your copy kept from webhooks before processing, then attest.',
  },
  {
    id: 'contact_email',
    area: 'principal_rights',
    severity: 'critical',
    title: 'A contact e-mail is set for principals and operators',
    howToFix: `Set contactEmail (PATCH ${ADMIN}).`,
    observe: contactEmail,
  },
  {
    id: 'grievance_contact',
    area: 'principal_rights',
    severity: 'important',
    title: 'A grievance officer or contact is published to principals',
    howToFix: 'Publish who handles grievances and how to reach them, then attest.',
  },
  {
    id: 'rights_requests_handled',
    area: 'principal_rights',
    severity: 'important',
    title: 'Principals can access, correct and erase their data',
    howToFix:
      'Embed the dashboard div or link the hosted portal, and handle correction requests, then attest.',
  },
  {
    id: 'secret_key_age',
    area: 'key_management',
    severity: 'critical',
    title: 'The secret key was rotated at least once or is younger than 90 days',
    howToFix: `Rotate the secret key (POST ${ADMIN}/secret/rotate).`,
    observe: secretAge,
  },
  {
    id: 'secret_kept_server_side',
    area: 'key_management',
    severity: 'important',
    title:
      'The secret key is kept on the server only (a secret store, never browser code or a repository)',
    howToFix: 'Move the key to a secret store readable by your server only, then attest.',
  },
  {
    id: 'ledger_api_key',
    area: 'audit_trail',
    severity: 'important',
    title: 'An API key can read the ledger (for audits and exports)',
    howToFix: `Create an API key with the scope ledger:read (POST ${ADMIN}/api-keys).`,
    observe: ledgerKey,
  },
  {
    id: 'deliveries_recorded',
    area: 'audit_trail',
    severity: 'important',
    title: 'A webhook delivery is recorded in the ledger',
    howToFix:
      'Make a consent change in the sandbox and answer its webhook with 2xx; the attempt is recorded in the ledger.',
    observe: delivered,
  },
  {
    id: 'own_records_kept',
    area: 'audit_trail',
    severity: 'recommended',
    title: 'The app keeps its own log of webhooks received and postbacks sent',
    howToFix: 'Log each webhook-id and each postback you send, then attest.',
  },
];

const byId = new Map(CHECKLIST_ITEMS.map((d) => [d.id, d]));

export type AttestCheck = 'attestable' | 'observed' | 'unknown';

/** Whether a person may attest this item: only items the service cannot observe. */
export function attestability(itemId: string): AttestCheck {
  const d = byId.get(itemId);
  if (!d) return 'unknown';
  return d.observe ? 'observed' : 'attestable';
}

function evaluateItem(d: ItemDef, s: ChecklistSnapshot, nowMs: number): ChecklistItem {
  let outcome: { status: ItemStatus; evidence: string };
  if (d.observe) {
    outcome = d.observe(s, nowMs);
  } else {
    const a = s.attestations[d.id];
    outcome = a
      ? { status: 'attested', evidence: `Attested by ${a.by} at ${a.at}: ${a.note}` }
      : { status: 'pending', evidence: 'Not attested yet' };
  }
  return {
    id: d.id,
    title: d.title,
    severity: d.severity,
    ...outcome,
    howToFix: d.howToFix,
  };
}

/** Satisfied: observed to pass, or attested. */
export const satisfied = (i: Pick<ChecklistItem, 'status'>) =>
  i.status === 'pass' || i.status === 'attested';

/** The checklist of an app from its snapshot, at `nowMs`. */
export function evaluateChecklist(s: ChecklistSnapshot, nowMs: number): Checklist {
  const items = CHECKLIST_ITEMS.map((d) => ({ area: d.area, item: evaluateItem(d, s, nowMs) }));
  const areas = CHECKLIST_AREAS.map((area) => ({
    area,
    items: items.filter((x) => x.area === area).map((x) => x.item),
  }));
  const blocking = failingCritical({ areas });
  return {
    appId: s.app.appId,
    environment: s.app.environment,
    canGoLive: s.app.environment === 'sandbox' && !s.app.goLiveAt && blocking.length === 0,
    areas,
  };
}

/** Critical items neither passed nor attested: what stops going live. */
export function failingCritical(c: Pick<Checklist, 'areas'>): ChecklistItem[] {
  return c.areas.flatMap((a) => a.items).filter((i) => i.severity === 'critical' && !satisfied(i));
}
