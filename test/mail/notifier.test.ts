import type { ParsedMail } from 'mailparser';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ConsentEvent } from '../../shared/domain/consent/index.js';
import { requestGrant } from '../../shared/mail/index.js';
import { verifyPrincipalToken } from '../../shared/principal/index.js';
import { notifierWorker } from '../../workers/notifier/index.js';
import { collectTopic } from '../helpers/kafka.js';
import { startPortalStack, type PortalApp, type PortalStack } from '../portal/fixture.js';
import { addresses, manageLink, startSmtp } from './smtp.js';

/** The notifier worker against a real SMTP server, Kafka and DynamoDB; links opened over HTTP. */

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let s: PortalStack;
let shop: PortalApp;
let dlq: Awaited<ReturnType<typeof collectTopic>>;

beforeAll(async () => {
  smtp = await startSmtp({ user: 'mailer', pass: 's3cret:/@' });
  s = await startPortalStack('notifier', {
    workers: [notifierWorker],
    env: { SMTP_URL: smtp.url, MAIL_FROM: 'Consent <consent@svc.test>' },
  });
  shop = await s.createApp();
  dlq = await collectTopic(s.p.rt.kafka, s.p.rt.topics.deadLetter);
});

afterAll(async () => {
  await dlq?.stop();
  await s?.close();
  await smtp?.close();
});

const WAIT = { timeout: 20_000, interval: 50 };

function mailsTo(address: string): ParsedMail[] {
  return smtp.received.filter((m) => addresses(m.to).includes(address));
}

const waitForMail = (address: string, subject: RegExp) =>
  vi.waitFor(() => {
    const m = mailsTo(address).find((x) => subject.test(x.subject ?? ''));
    expect(m, `a mail to ${address} matching ${subject}`).toBeDefined();
    return m!;
  }, WAIT);

/** The link's principal token: in the fragment, which no browser sends to a server. */
const tokenOf = (link: string) =>
  new URLSearchParams(new URL(link).hash.slice(1)).get('token') ?? '';

/**
 * Opens the link as the recipient's browser would: the portal page for that principal, whose
 * script then asks the portal API, with the token from the fragment, whose link it is.
 */
async function expectPortalOpens(link: string, referenceId: string) {
  const url = new URL(link);
  expect(`${url.origin}${url.pathname}`).toBe(`${s.url}/portal/${referenceId}`);
  expect(url.search).toBe('');
  const r = await fetch(link);
  expect(r.status).toBe(200);
  expect(await r.text()).toContain(referenceId);
  const session = await fetch(`${s.url}/portal/api/${referenceId}/session`, {
    headers: { authorization: `Portal ${tokenOf(link)}` },
  });
  expect(session.status).toBe(200);
  expect(await session.json()).toMatchObject({ referenceId, app: { name: 'Shop & Co' } });
}

function expectPrincipalMail(m: ParsedMail, eventId: string) {
  expect(addresses(m.from)).toEqual(['consent@svc.test']);
  expect(addresses(m.replyTo)).toEqual(['dpo@shop.example']);
  expect(m.text).toContain('Contact Shop & Co at dpo@shop.example');
  expect(m.html).toContain('mailto:dpo@shop.example');
  expect(m.messageId).toBe(`<${eventId}@svc.test>`);
}

function reminder(appId: string, referenceId: string, id = `evt_${ulid()}`): ConsentEvent {
  return {
    id,
    type: 'consent.expiry.reminder',
    apiVersion: 'v1',
    createdAt: new Date().toISOString(),
    appId,
    environment: 'sandbox',
    data: {
      referenceId,
      userId: null,
      consentId: '0190a4e2-0000-7000-8000-000000000000',
      sequence: 3,
      recordIds: [],
      purposes: { marketing: true },
      state: { marketing: 'granted' },
      noticeId: null,
      noticeVersion: null,
      expiresAt: '2031-03-01T00:00:00.000Z',
    },
  };
}

const produce = (topic: string, key: string, value: unknown) =>
  s.p.rt.producer.send([{ topic, key, value: JSON.stringify(value) }]);

const emailsCounted = async (kind: string, outcome: string) => {
  const m = await s.p.rt.registry.getSingleMetric('svc_notifier_emails_total')?.get();
  return m?.values.find((v) => v.labels.kind === kind && v.labels.outcome === outcome)?.value ?? 0;
};

describe('notifier e-mails over SMTP', () => {
  it('acknowledges an erasure (data.deleted) with a working Manage consent link', async () => {
    const alice = await s.createPrincipal(shop, 'alice@example.test');
    const txn = alice.transaction.transactionId;
    const r = await fetch(`${s.url}/api/public/consents/my-transactions/${txn}/erase`, {
      method: 'POST',
      headers: { 'x-secret-key': shop.secretKey },
    });
    expect(r.status).toBe(200);
    const m = await waitForMail('alice@example.test', /erasure/);
    const event = await vi.waitFor(() => {
      const e = s.events
        .map((x) => x.value as ConsentEvent)
        .find((e) => e.type === 'data.deleted' && e.data.referenceId === alice.referenceId);
      expect(e).toBeDefined();
      return e!;
    }, WAIT);
    expectPrincipalMail(m, event.id);
    expect(m.subject).toBe('Shop & Co has received your erasure request');
    expect(m.text).toContain('analytics, marketing');
    expect(m.text).toContain(alice.referenceId);
    const link = manageLink(m);
    const v = verifyPrincipalToken(s.p.rt.config, tokenOf(link));
    expect(v.ok && v.claims).toMatchObject({
      appId: shop.app.appId,
      referenceId: alice.referenceId,
      kind: 'portal',
    });
    // Issued after the erasure it acknowledges, so it still opens (read-only: all is erased).
    await expectPortalOpens(link, alice.referenceId);
  });

  it('sends one expiry reminder per event id, however often it is delivered', async () => {
    const bob = await s.createPrincipal(shop, 'bob@example.test');
    const first = reminder(shop.app.appId, bob.referenceId);
    const key = `${shop.app.appId}:${bob.referenceId}`;
    await produce(s.p.rt.topics.consentEvents, key, first);
    await produce(s.p.rt.topics.consentEvents, key, first);
    // Same key, same partition: once the marker's e-mail is out, both copies were handled.
    const marker = reminder(shop.app.appId, bob.referenceId);
    await produce(s.p.rt.topics.consentEvents, key, marker);
    await vi.waitFor(
      () =>
        expect(mailsTo('bob@example.test').map((m) => m.messageId)).toContain(
          `<${marker.id}@svc.test>`,
        ),
      WAIT,
    );
    const copies = mailsTo('bob@example.test').filter(
      (m) => m.messageId === `<${first.id}@svc.test>`,
    );
    expect(copies).toHaveLength(1);
    const m = copies[0]!;
    expectPrincipalMail(m, first.id);
    expect(m.subject).toBe('Your consent to Shop & Co expires on 2031-03-01');
    expect(m.text).toContain('for marketing expires on 2031-03-01');
    await expectPortalOpens(manageLink(m), bob.referenceId);
  });

  it('sends a grant request queued with requestGrant', async () => {
    const carol = await s.createPrincipal(shop, 'carol@example.test');
    const queued = await requestGrant(s.p.rt, {
      appId: shop.app.appId,
      referenceId: carol.referenceId,
    });
    const m = await waitForMail('carol@example.test', /asks for your consent/);
    expectPrincipalMail(m, queued.id);
    expect(m.subject).toBe('Shop & Co asks for your consent');
    await expectPortalOpens(manageLink(m), carol.referenceId);
    // An explicit address wins over the stored one.
    await requestGrant(s.p.rt, {
      appId: shop.app.appId,
      referenceId: carol.referenceId,
      to: 'carol.new@example.test',
    });
    await waitForMail('carol.new@example.test', /asks for your consent/);
    await expect(
      requestGrant(s.p.rt, { appId: shop.app.appId, referenceId: 'SVC-REF-00000000' }),
    ).rejects.toMatchObject({ code: 'SVC_NOT_FOUND' });
  });

  it("links to the app's own portal URL when it has a template", async () => {
    const custom = await s.createApp({
      name: 'Custom',
      portalUrlTemplate: 'https://custom.example/privacy/{referenceId}?from=email',
    });
    const dave = await s.createPrincipal(custom, 'dave@example.test');
    await requestGrant(s.p.rt, { appId: custom.app.appId, referenceId: dave.referenceId });
    const m = await waitForMail('dave@example.test', /asks for your consent/);
    expect(manageLink(m)).toBe(`https://custom.example/privacy/${dave.referenceId}?from=email`);
  });

  it('skips, with a log line, a principal with no e-mail address', async () => {
    const before = await emailsCounted('expiry_reminder', 'skipped');
    const ghost = reminder(shop.app.appId, 'SVC-REF-ZZZZ9999');
    await produce(s.p.rt.topics.consentEvents, `${shop.app.appId}:SVC-REF-ZZZZ9999`, ghost);
    await vi.waitFor(
      async () => expect(await emailsCounted('expiry_reminder', 'skipped')).toBe(before + 1),
      WAIT,
    );
    expect(smtp.received.some((m) => m.messageId === `<${ghost.id}@svc.test>`)).toBe(false);
  });

  it("tells the app's contact when its webhook endpoint was disabled", async () => {
    const id = `ntf_${ulid()}`;
    await produce(s.p.rt.topics.notifications, shop.app.appId, {
      id,
      type: 'endpoint.disabled',
      appId: shop.app.appId,
      to: 'ops@shop.example',
      reason: 'failing',
      url: 'https://shop.example/hooks',
      disabledAt: '2030-01-01T00:00:00.000Z',
    });
    const m = await waitForMail('ops@shop.example', /Webhook deliveries/);
    expect(m.subject).toBe('Webhook deliveries to Shop & Co are stopped');
    expect(m.text).toContain('https://shop.example/hooks');
    expect(m.text).toContain('Reason: failing');
    expect(m.text).not.toContain('Manage consent');
  });

  it('dead-letters a malformed notification instead of blocking the topic', async () => {
    await produce(s.p.rt.topics.notifications, 'x', { type: 'grant.request', appId: 'nope' });
    await vi.waitFor(() => {
      const d = dlq.messages.find((m) => m.headers['x-dlq-topic'] === s.p.rt.topics.notifications);
      expect(d?.headers['x-dlq-code']).toBe('SVC_VALIDATION_FAILED');
    }, WAIT);
  });
});
