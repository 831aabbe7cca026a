import { describe, expect, it } from 'vitest';
import {
  attestability,
  CHECKLIST_AREAS,
  CHECKLIST_ITEMS,
  evaluateChecklist,
  failingCritical,
  type ChecklistItem,
  type ChecklistSnapshot,
  type PostbackObservation,
  type TestEventObservation,
} from './checklist.js';

const NOW = Date.parse('2026-11-25T12:00:00.000Z');
const DAY = 86_400_000;
const iso = (ms: number) => new Date(ms).toISOString();
const URL_ = 'https://shop.example/hooks';

/** A snapshot in which every observed item passes and every attested item is attested. */
function good(): ChecklistSnapshot {
  const attest = { by: 'dpo@shop.example', note: 'checked', at: iso(NOW - DAY) };
  const onTime = (event: string): PostbackObservation => ({
    dispatchId: `dsp_${event}`,
    createdAt: iso(NOW - 2 * DAY),
    postbackDueAt: iso(NOW - 2 * DAY + 3_600_000),
    complianceFlag: 'ok',
    postbacks: [{ receivedAt: iso(NOW - 2 * DAY + 60_000), status: 'processed' }],
  });
  return {
    app: {
      appId: 'app_1',
      environment: 'sandbox',
      webhookUrl: URL_,
      allowedOrigins: ['https://shop.example'],
      contactEmail: 'dpo@shop.example',
      secretVersion: 1,
      createdAt: iso(NOW - 10 * DAY),
      widgetVerifiedAt: iso(NOW - DAY),
      widgetVerifiedOrigin: 'https://shop.example',
      goLiveAt: null,
    },
    notices: [
      {
        noticeId: 'ntc_1',
        version: 2,
        purposes: [{ name: 'marketing', required: false, dataItems: ['email'] }],
        translations: { en: { title: 'T', body: 'B', purposes: {} } },
      },
    ],
    apiKeys: [{ id: 'ak_1', scopes: ['ledger:read'], revokedAt: null }],
    testEvents: {
      signed: {
        at: iso(NOW - DAY),
        url: URL_,
        type: 'consent.granted',
        status: 204,
        durationMs: 5,
      },
      badSignature: {
        at: iso(NOW - DAY),
        url: URL_,
        type: 'consent.granted',
        status: 401,
        durationMs: 5,
      },
    },
    postbacks: {
      'consent.withdrawn': [onTime('w')],
      'consent.expired': [onTime('e')],
      'data.deleted': [onTime('d')],
    },
    delivered: { dispatchId: 'dsp_x', deliveredAt: iso(NOW - DAY) },
    attestations: Object.fromEntries(
      CHECKLIST_ITEMS.filter((d) => !d.observe).map((d) => [d.id, attest]),
    ),
  };
}

function item(s: ChecklistSnapshot, id: string, nowMs = NOW): ChecklistItem {
  const found = evaluateChecklist(s, nowMs)
    .areas.flatMap((a) => a.items)
    .find((i) => i.id === id);
  if (!found) throw new Error(`no item ${id}`);
  return found;
}

type Change = (s: ChecklistSnapshot) => void;
const sig = (o: Partial<TestEventObservation>): TestEventObservation => ({
  at: iso(NOW - DAY),
  url: URL_,
  type: 'consent.granted',
  status: 200,
  durationMs: 3,
  ...o,
});
const withdrawn = (o: Partial<PostbackObservation>): PostbackObservation => ({
  dispatchId: 'dsp_w',
  createdAt: iso(NOW - 2 * 3_600_000),
  postbackDueAt: iso(NOW - 3_600_000),
  complianceFlag: null,
  postbacks: [],
  ...o,
});

describe('evaluateChecklist', () => {
  it('lists the seven areas in order, every item once', () => {
    const c = evaluateChecklist(good(), NOW);
    expect(c.areas.map((a) => a.area)).toEqual([...CHECKLIST_AREAS]);
    expect(c.areas.every((a) => a.items.length > 0)).toBe(true);
    const ids = c.areas.flatMap((a) => a.items.map((i) => i.id));
    expect(new Set(ids).size).toBe(CHECKLIST_ITEMS.length);
  });

  it('a satisfied snapshot can go live; a live or already-live app cannot', () => {
    expect(evaluateChecklist(good(), NOW).canGoLive).toBe(true);
    const live = good();
    live.app.environment = 'live';
    expect(evaluateChecklist(live, NOW).canGoLive).toBe(false);
    const went = good();
    went.app.goLiveAt = iso(NOW);
    expect(evaluateChecklist(went, NOW).canGoLive).toBe(false);
  });

  it('a fresh app fails or awaits every critical item but its key age and contact', () => {
    const s = good();
    s.app.widgetVerifiedAt = null;
    s.notices = [];
    s.apiKeys = [];
    s.testEvents = {};
    s.postbacks = { 'consent.withdrawn': [], 'consent.expired': [], 'data.deleted': [] };
    s.delivered = undefined;
    s.attestations = {};
    const c = evaluateChecklist(s, NOW);
    expect(c.canGoLive).toBe(false);
    expect(failingCritical(c).map((i) => [i.id, i.status])).toEqual([
      ['notice_published', 'fail'],
      ['widget_verified', 'fail'],
      ['webhook_signed_test', 'fail'],
      ['webhook_rejects_bad_signature', 'fail'],
      ['postback_consent_withdrawn', 'fail'],
      ['postback_consent_expired', 'fail'],
      ['postback_data_deleted', 'fail'],
      ['processing_stops_on_withdrawal', 'pending'],
    ]);
  });

  // [item, change to a passing snapshot, expected status, evidence matching]
  const table: [string, Change, ChecklistItem['status'], RegExp][] = [
    [
      'notice_published',
      () => {},
      'pass',
      /ntc_1 v2: 1 purpose\(s\), 1 data item\(s\), languages en/,
    ],
    ['notice_published', (s) => (s.notices = []), 'fail', /no notice/],
    [
      'notice_published',
      (s) => (s.notices[0]!.purposes = [{ name: 'm', required: false, dataItems: [] }]),
      'fail',
      /none with/,
    ],
    ['notice_published', (s) => (s.notices[0]!.purposes = []), 'fail', /none with/],
    [
      'notice_published',
      (s) => (s.notices[0]!.translations = { en: { title: ' ', body: 'B', purposes: {} } }),
      'fail',
      /none with/,
    ],
    ['widget_verified', () => {}, 'pass', /from https:\/\/shop\.example/],
    ['widget_verified', (s) => (s.app.widgetVerifiedAt = null), 'fail', /never/],
    ['widget_verified', (s) => (s.app.widgetVerifiedAt = iso(NOW - 30 * DAY)), 'pass', /Verified/],
    [
      'widget_verified',
      (s) => (s.app.widgetVerifiedAt = iso(NOW - 30 * DAY - 1)),
      'fail',
      /more than 30/,
    ],
    [
      'widget_verified',
      (s) => (s.app.allowedOrigins = ['https://other.example']),
      'fail',
      /no longer on the allowlist/,
    ],
    ['webhook_signed_test', () => {}, 'pass', /HTTP 204/],
    ['webhook_signed_test', (s) => (s.testEvents.signed = undefined), 'fail', /No signed/],
    [
      'webhook_signed_test',
      (s) => (s.testEvents.signed = sig({ status: 500 })),
      'fail',
      /HTTP 500/,
    ],
    [
      'webhook_signed_test',
      (s) => (s.testEvents.signed = sig({ status: 302 })),
      'fail',
      /HTTP 302/,
    ],
    [
      'webhook_signed_test',
      (s) => (s.testEvents.signed = sig({ status: null, errorClass: 'timeout' })),
      'fail',
      /no answer \(timeout\)/,
    ],
    [
      'webhook_signed_test',
      (s) => (s.testEvents.signed = sig({ url: 'https://old.example/hooks' })),
      'fail',
      /another URL/,
    ],
    ['webhook_rejects_bad_signature', () => {}, 'pass', /HTTP 401: rejected/],
    [
      'webhook_rejects_bad_signature',
      (s) => (s.testEvents.badSignature = undefined),
      'fail',
      /No mis-signed/,
    ],
    [
      'webhook_rejects_bad_signature',
      (s) => (s.testEvents.badSignature = sig({ status: 200 })),
      'fail',
      /does not verify/,
    ],
    [
      'webhook_rejects_bad_signature',
      (s) => (s.testEvents.badSignature = sig({ status: null, errorClass: 'connection' })),
      'fail',
      /must answer/,
    ],
    [
      'webhook_rejects_bad_signature',
      (s) => (s.testEvents.badSignature = sig({ url: 'https://old.example/hooks', status: 401 })),
      'fail',
      /another URL/,
    ],
    [
      'webhook_rejects_bad_signature',
      (s) => {
        s.app.webhookUrl = 'http://localhost:8080/sandbox/inbox/app_x';
        s.testEvents.badSignature = sig({ url: s.app.webhookUrl, status: 401 });
      },
      'fail',
      /built-in sandbox inbox/,
    ],
    [
      'webhook_signed_test',
      (s) => {
        s.app.webhookUrl = 'http://localhost:8080/sandbox/inbox/app_x';
        s.testEvents.signed = sig({ url: s.app.webhookUrl, status: 200 });
      },
      'fail',
      /built-in sandbox inbox/,
    ],
    ['postback_consent_withdrawn', () => {}, 'pass', /dsp_w: processed postback received/],
    [
      'postback_consent_withdrawn',
      (s) => (s.postbacks['consent.withdrawn'] = []),
      'fail',
      /No consent\.withdrawn webhook/,
    ],
    [
      'postback_consent_withdrawn',
      (s) =>
        (s.postbacks['consent.withdrawn'] = [
          withdrawn({ postbacks: [{ receivedAt: iso(NOW - 3_600_000), status: 'processed' }] }),
        ]),
      'pass',
      /received/,
    ],
    [
      'postback_consent_withdrawn',
      (s) =>
        (s.postbacks['consent.withdrawn'] = [
          withdrawn({
            complianceFlag: 'at_risk',
            postbacks: [{ receivedAt: iso(NOW - 3_600_000 + 1), status: 'processed' }],
          }),
        ]),
      'fail',
      /none with a postback within its window; latest dsp_w, flag at_risk/,
    ],
    [
      'postback_consent_withdrawn',
      (s) => (s.postbacks['consent.withdrawn'] = [withdrawn({ postbackDueAt: iso(NOW + 1000) })]),
      'pending',
      /awaits its postback/,
    ],
    [
      'postback_consent_withdrawn',
      (s) =>
        (s.postbacks['consent.withdrawn'] = [
          withdrawn({ dispatchId: 'dsp_new', postbackDueAt: iso(NOW + 1000) }),
          withdrawn({ postbacks: [{ receivedAt: iso(NOW - 2 * 3_600_000), status: 'failed' }] }),
        ]),
      'pass',
      /dsp_w: failed postback/,
    ],
    [
      'postback_data_deleted',
      (s) =>
        (s.postbacks['data.deleted'] = [
          withdrawn({ postbacks: [{ receivedAt: iso(NOW - 2 * 3_600_000), status: 'failed' }] }),
        ]),
      'fail',
      /none with a confirming postback/,
    ],
    [
      'postback_data_deleted',
      (s) =>
        (s.postbacks['data.deleted'] = [
          withdrawn({ postbacks: [{ receivedAt: iso(NOW - 2 * 3_600_000), status: 'deleted' }] }),
        ]),
      'pass',
      /deleted postback/,
    ],
    [
      'postback_consent_expired',
      (s) => (s.postbacks['consent.expired'] = [withdrawn({ postbackDueAt: null })]),
      'fail',
      /none with a postback/,
    ],
    ['contact_email', () => {}, 'pass', /dpo@shop\.example/],
    ['contact_email', (s) => (s.app.contactEmail = ''), 'fail', /No valid/],
    ['contact_email', (s) => (s.app.contactEmail = 'not-an-address'), 'fail', /No valid/],
    ['secret_key_age', () => {}, 'pass', /Never rotated, issued .* \(10 days ago\)/],
    ['secret_key_age', (s) => (s.app.createdAt = iso(NOW - 90 * DAY)), 'fail', /more than 90/],
    [
      'secret_key_age',
      (s) => {
        s.app.createdAt = iso(NOW - 400 * DAY);
        s.app.secretVersion = 2;
      },
      'pass',
      /version 2/,
    ],
    ['ledger_api_key', () => {}, 'pass', /ak_1/],
    [
      'ledger_api_key',
      (s) => (s.apiKeys = [{ id: 'ak_1', scopes: ['ledger:read'], revokedAt: iso(NOW) }]),
      'fail',
      /No unrevoked/,
    ],
    [
      'ledger_api_key',
      (s) => (s.apiKeys = [{ id: 'ak_2', scopes: ['consents:read'], revokedAt: null }]),
      'fail',
      /No unrevoked/,
    ],
    ['deliveries_recorded', () => {}, 'pass', /dsp_x delivered/],
    ['deliveries_recorded', (s) => (s.delivered = undefined), 'fail', /No webhook delivery/],
    [
      'processing_stops_on_withdrawal',
      () => {},
      'attested',
      /Attested by dpo@shop\.example at .*: checked/,
    ],
    ['processing_stops_on_withdrawal', (s) => (s.attestations = {}), 'pending', /Not attested/],
  ];

  const rows = table.map(([id, change, status, evidence], row) => ({
    id,
    change,
    status,
    evidence,
    row,
  }));
  it.each(rows)('$id, row $row → $status', ({ id, change, status, evidence }) => {
    const s = good();
    change(s);
    const i = item(s, id);
    expect(i.status).toBe(status);
    expect(i.evidence).toMatch(evidence);
    expect(i.howToFix.length).toBeGreaterThan(0);
  });

  it('a failing important or recommended item never stops a go-live', () => {
    const s = good();
    s.apiKeys = [];
    s.delivered = undefined;
    delete s.attestations.webhook_deduplicates;
    const c = evaluateChecklist(s, NOW);
    expect(item(s, 'ledger_api_key').status).toBe('fail');
    expect(item(s, 'webhook_deduplicates').status).toBe('pending');
    expect(c.canGoLive).toBe(true);
  });

  it('a pending critical item stops a go-live like a failing one', () => {
    const s = good();
    s.postbacks['consent.expired'] = [withdrawn({ postbackDueAt: iso(NOW + 1000) })];
    const c = evaluateChecklist(s, NOW);
    expect(c.canGoLive).toBe(false);
    expect(failingCritical(c).map((i) => i.id)).toEqual(['postback_consent_expired']);
  });
});

describe('attestability', () => {
  it.each([
    ['processing_stops_on_withdrawal', 'attestable'],
    ['grievance_contact', 'attestable'],
    ['notice_published', 'observed'],
    ['webhook_signed_test', 'observed'],
    ['no_such_item', 'unknown'],
    ['__proto__', 'unknown'],
  ])('%s is %s', (id, kind) => {
    expect(attestability(id)).toBe(kind);
  });
});
