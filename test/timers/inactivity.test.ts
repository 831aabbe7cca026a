import { randomBytes } from 'node:crypto';
import { GetCommand, ScanCommand } from '@aws-sdk/lib-dynamodb';
import type { ParsedMail } from 'mailparser';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { consentsService } from '../../services/consents/index.js';
import { publicApiService } from '../../services/public-api/index.js';
import { DAY_MS, WARNING_LEAD_MS } from '../../shared/domain/consent/activity.js';
import type { ConsentEvent } from '../../shared/domain/consent/index.js';
import { keys } from '../../shared/storage/consents/repository.js';
import type { RunningProcess } from '../../bin/process.js';
import { dispatcherWorker } from '../../workers/dispatcher/index.js';
import { notifierWorker } from '../../workers/notifier/index.js';
import { relayWorker } from '../../workers/relay/index.js';
import { createTimersWorker } from '../../workers/timers/index.js';
import { client } from '../admin/client.js';
import { startReceiver, type Receiver } from '../dispatch/helpers.js';
import { testProcess } from '../helpers/stack.js';
import { addresses, startSmtp } from '../mail/smtp.js';

/**
 * Inactivity erasure end to end, in real time compressed by a sandbox app's time scale: 43,200
 * makes a day 2 s, so a 7-day policy warns about 10 s after the last activity and erases 6 s
 * (3 compressed days, at least the 4 s that 48 hours are) after the warning. The warning goes
 * through the notifier to a real SMTP server, the erasure's `data.deleted` to a loopback
 * receiver; a principal active after its warning is not erased.
 */

const SCALE = 43_200;
const DAYS = 7;
const token = `inactivity-admin-${randomBytes(12).toString('hex')}`;
let p: RunningProcess;
let rcv: Receiver;
let smtp: Awaited<ReturnType<typeof startSmtp>>;

/** Any call to the process; no answer may be a 5xx. */
async function call(
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: unknown,
) {
  const r = await client(p.url)(method, path, body, headers);
  expect(r.status, `${method} ${path} → ${JSON.stringify(r.body)}`).toBeLessThan(500);
  return r;
}
const admin = (method: string, path: string, body?: unknown) =>
  call(method, `/api/v1/admin${path}`, { authorization: `Bearer ${token}` }, body);

interface Shop {
  appId: string;
  secretKey: string;
  key: string;
}

async function createShop(name: string, policy?: number): Promise<Shop> {
  const created = await admin('POST', '/apps', {
    name,
    environment: 'sandbox',
    webhookUrl: rcv.url(`/hooks/${name}`),
    allowedOrigins: ['https://shop.example'],
    contactEmail: 'dpo@shop.example',
    slaTimeScale: SCALE,
    ...(policy ? { inactivityErasureDays: policy } : {}),
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const appId = created.body.app.appId as string;
  const key = await admin('POST', `/apps/${appId}/api-keys`, {
    name: 'rw',
    scopes: ['consents:read', 'consents:write'],
  });
  return { appId, secretKey: created.body.secretKey, key: key.body.key };
}

interface Person {
  userId: string;
  email: string;
  referenceId: string;
  transactionId: string;
}

async function person(s: Shop, name: string): Promise<Person> {
  const userId = `${name}-${randomBytes(4).toString('hex')}`;
  const email = `${userId}@example.test`;
  const r = await call(
    'POST',
    '/api/v1/consents',
    { authorization: `Bearer ${s.key}` },
    { userId, email, consents: { marketing: true } },
  );
  expect(r.status).toBe(201);
  return { userId, email, referenceId: r.body.referenceId, transactionId: r.body.transactionId };
}

async function principalItem(s: Shop, x: Person) {
  const r = await p.rt.dynamo.doc.send(
    new GetCommand({
      TableName: p.rt.tables.entities,
      Key: keys.principal(s.appId, x.referenceId),
      ConsistentRead: true,
    }),
  );
  return r.Item!;
}

const WAIT = { timeout: 40_000, interval: 50 };

/** The first e-mail to `x` whose subject matches. */
function mailTo(x: Person, subject: RegExp): ParsedMail | undefined {
  const m = smtp.received.find(
    (m) => addresses(m.to).includes(x.email) && subject.test(m.subject ?? ''),
  );
  return m;
}
const waitForMail = (x: Person, subject: RegExp) =>
  vi.waitFor(() => {
    const m = mailTo(x, subject);
    expect(m, `a mail to ${x.email} matching ${subject}`).toBeDefined();
    return m!;
  }, WAIT);

function hooks(s: Shop, name: string, x: Person): ConsentEvent[] {
  const wh = new Webhook(Buffer.from(s.secretKey), { format: 'raw' });
  return rcv
    .at(`/hooks/${name}`)
    .map((r) => {
      const headers = Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]));
      return wh.verify(r.body, headers) as ConsentEvent;
    })
    .filter((e) => e.data.referenceId === x.referenceId);
}

/** When the principal's `inactivity` entries of the due-index are due. */
async function inactivityTimers(x: Person): Promise<number[]> {
  const r = await p.rt.dynamo.doc.send(
    new ScanCommand({
      TableName: p.rt.tables.timers,
      FilterExpression: 'kind = :k AND referenceId = :r',
      ExpressionAttributeValues: { ':k': 'inactivity', ':r': x.referenceId },
      ConsistentRead: true,
    }),
  );
  return (r.Items ?? []).map((t) => Date.parse(String(t.dueAt)));
}

const WARNING = /will be erased on/;

beforeAll(async () => {
  rcv = await startReceiver();
  smtp = await startSmtp({ user: 'mailer', pass: 'pw' });
  p = await testProcess(
    'inactivity',
    [adminService, consentsService, publicApiService],
    [relayWorker, dispatcherWorker, createTimersWorker(), notifierWorker],
    {
      SVC_ADMIN_TOKEN: token,
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Consent <consent@svc.test>',
      TIMER_SWEEP_INTERVAL_MS: '100',
      EXPIRY_SWEEP_INTERVAL_MS: '100',
      DUTY_SWEEP_INTERVAL_MS: '100',
      WEBHOOK_TIMEOUT_MS: '2000',
    },
  );
});
afterAll(async () => {
  rcv?.releaseAll();
  await p?.close();
  await rcv?.close();
  await smtp?.close();
});

describe('inactivity erasure', () => {
  it('refuses a policy below a week', async () => {
    const s = await createShop('short');
    const r = await admin('PATCH', `/apps/${s.appId}`, { inactivityErasureDays: 3 });
    expect(r.status).toBe(422);
    expect(r.body.errors[0]).toMatchObject({ path: '/inactivityErasureDays' });
    const ok = await admin('PATCH', `/apps/${s.appId}`, { inactivityErasureDays: 30 });
    expect(ok.body.inactivityErasureDays).toBe(30);
    const off = await admin('PATCH', `/apps/${s.appId}`, { inactivityErasureDays: null });
    expect(off.body.inactivityErasureDays).toBeUndefined();
  });

  it('warns by e-mail at least 48 h (compressed) before, then erases; activity after the warning keeps the data', async () => {
    const shop = await createShop('shop', DAYS);
    // An app that sets the policy later: its earlier principals are scheduled by a scan.
    const later = await createShop('later');
    const alice = await person(shop, 'alice');
    const bob = await person(shop, 'bob');
    const carol = await person(later, 'carol');
    expect(
      (await admin('PATCH', `/apps/${later.appId}`, { inactivityErasureDays: DAYS })).status,
    ).toBe(200);

    const aliceWarning = await waitForMail(alice, WARNING);
    expect(aliceWarning.text).toContain(`used its service for ${DAYS} days`);
    expect(aliceWarning.text).toContain(`Manage consent: `);
    await waitForMail(bob, WARNING);
    await waitForMail(carol, WARNING);
    // Bob comes back: his app reads his record (the record API), which is activity.
    const warnedBob = await principalItem(shop, bob);
    expect(warnedBob.inactivityWarnedAt).toBeDefined();
    const r = await call('GET', `/api/v1/consents/${bob.userId}`, {
      authorization: `Bearer ${shop.key}`,
    });
    expect(r.status).toBe(200);
    await vi.waitFor(async () => {
      const item = await principalItem(shop, bob);
      expect(item.inactivityWarnedAt).toBeUndefined();
      expect(Date.parse(item.lastActiveAt)).toBeGreaterThan(
        Date.parse(warnedBob.inactivityWarnedAt),
      );
    }, WAIT);

    // Alice is erased: data.deleted with its 24 h postback (compressed), after the warning.
    const deleted = await vi.waitFor(() => {
      const e = hooks(shop, 'shop', alice).find((x) => x.type === 'data.deleted');
      expect(e).toBeDefined();
      return e!;
    }, WAIT);
    expect(deleted.data).toMatchObject({
      consentId: alice.transactionId,
      reason: 'inactivity',
      purposes: { marketing: false },
      state: { marketing: 'erased' },
      postback: { required: true },
    });
    // Numbered on from alice's earlier events (consent.created 1, consent.granted 2, …).
    const earlier = hooks(shop, 'shop', alice).filter((e) => e.id !== deleted.id);
    expect(earlier.map((e) => e.data.sequence)).toContain(2);
    expect(deleted.data.sequence).toBe(Math.max(...earlier.map((e) => e.data.sequence)) + 1);
    const createdAt = Date.parse(deleted.createdAt);
    expect(Date.parse(deleted.data.postback!.dueAt) - createdAt).toBe((24 * 3_600_000) / SCALE);
    // From when the SMTP server received the warning, not when this test's polling saw it.
    const lead = createdAt - smtp.receivedAt(aliceWarning)!;
    expect(lead).toBeGreaterThanOrEqual((48 * 3_600_000) / SCALE);
    const aliceItem = await principalItem(shop, alice);
    expect(createdAt - Date.parse(aliceItem.inactivityWarnedAt)).toBeGreaterThanOrEqual(
      WARNING_LEAD_MS / SCALE,
    );
    expect(createdAt - Date.parse(aliceItem.lastActiveAt)).toBeGreaterThanOrEqual(
      ((DAYS + 1) * DAY_MS) / SCALE,
    );
    const txn = await call('GET', `/api/public/consents/my-transactions/${alice.transactionId}`, {
      'x-secret-key': shop.secretKey,
    });
    expect(txn.body.status).toBe('erased');
    const ack = await waitForMail(alice, /erased your data after a period of inactivity/);
    expect(ack.text).toContain('marketing');

    // Bob's erasure timer has fired and found him active: it waits for his next warning now.
    const bobEraseAt = Date.parse(warnedBob.inactivityWarnedAt) + WARNING_LEAD_MS / SCALE;
    const next = await vi.waitFor(async () => {
      const due = await inactivityTimers(bob);
      expect(due.filter((d) => d <= bobEraseAt + 1)).toEqual([]);
      expect(due).toHaveLength(1);
      return due[0]!;
    }, WAIT);
    expect(next).toBeGreaterThan(bobEraseAt);
    const bobTxn = await call('GET', `/api/public/consents/my-transactions/${bob.transactionId}`, {
      'x-secret-key': shop.secretKey,
    });
    expect(bobTxn.body.status).toBe('active');
    expect(hooks(shop, 'shop', bob).some((e) => e.type === 'data.deleted')).toBe(false);
    expect((await principalItem(shop, bob)).email).toBe(bob.email);
  }, 120_000);
});
