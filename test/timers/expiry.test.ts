import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { consentEventSchema, type ConsentEvent } from '../../shared/domain/consent/events.js';
import { keys } from '../../shared/domain/consent/repository.js';
import { expiryEntry, type ExpiryKind } from '../../shared/domain/consent/timers.js';
import { startPipeline, type Pipeline, type PipelineApp } from '../compliance/fixture.js';

/**
 * Expiry reminders and expiries end to end. Scale 3600 compresses the default 365-day window
 * to about 2.4 h (reminder 30 days before: about 2.2 h); the workers' clock is moved there.
 */
let f: Pipeline;
let a: PipelineApp;
const DAY_MS = 86_400_000;
const SCALE = 3600;

beforeAll(async () => {
  f = await startPipeline('timers-expiry');
  a = await f.createApp(SCALE);
});
afterAll(async () => {
  await f?.close();
});

const eventsOf = (referenceId: string): ConsentEvent[] =>
  f.events
    .map((m) => consentEventSchema.safeParse(m.value))
    .filter((r) => r.success && r.data.data.referenceId === referenceId)
    .map((r) => r.data!);

async function waitForEvent(referenceId: string, type: ConsentEvent['type']) {
  return vi.waitFor(
    () => {
      const e = eventsOf(referenceId).find((x) => x.type === type);
      expect(e, type).toBeDefined();
      return e!;
    },
    { timeout: 15_000, interval: 50 },
  );
}

/** Moves the workers' clock to just after `ms`. */
const moveTo = (ms: number) => f.clock.advance(Math.max(0, ms + 500 - f.clock.now()));

async function transactionItem(referenceId: string, transactionId: string) {
  const r = await f.rt.dynamo.doc.send(
    new GetCommand({
      TableName: f.rt.tables.entities,
      Key: keys.transaction(a.appId, referenceId, transactionId),
      ConsistentRead: true,
    }),
  );
  return r.Item!;
}

/** Puts a timer due now again and waits until a worker has fired (and removed) it. */
async function fireAgain(kind: ExpiryKind, t: { referenceId: string; transactionId: string }) {
  const e = expiryEntry(kind, { appId: a.appId, ...t }, f.clock.now(), f.rt.config.TIMER_SHARDS);
  const done = await f.metric('svc_timers_fired_total', { kind, outcome: 'done' });
  await f.rt.dynamo.doc.send(new PutCommand({ TableName: f.rt.tables.timers, Item: { ...e } }));
  await f.waitForMetric('svc_timers_fired_total', { kind, outcome: 'done' }, done + 1);
}

describe('validity window timers', () => {
  it('reminds before expiry, then expires every live record, each once', async () => {
    const userId = 'expiring-user';
    const created = await f.http(
      'POST',
      '/api/v1/consents',
      { userId, email: 'e@mail.example', consents: { marketing: true, analytics: false } },
      f.bearer(a),
    );
    expect(created.status).toBe(201);
    const { referenceId, transactionId } = created.body as {
      referenceId: string;
      transactionId: string;
    };
    const start = Date.parse(created.body.createdAt);
    const expireAt = Math.ceil(start + (365 * DAY_MS) / SCALE);
    const reminderAt = Math.ceil(start + (335 * DAY_MS) / SCALE);
    // The reminder's timer was written with the transaction, at the compressed instant; the
    // expiry's is written when the reminder fires.
    const timer = async (kind: 'reminder' | 'expire', at: number) => {
      const k = expiryEntry(kind, { appId: a.appId, referenceId, transactionId }, at, 8);
      const stored = await f.rt.dynamo.doc.send(
        new GetCommand({
          TableName: f.rt.tables.timers,
          Key: { pk: k.pk, sk: k.sk },
          ConsistentRead: true,
        }),
      );
      return { k, item: stored.Item };
    };
    const r = await timer('reminder', reminderAt);
    expect(r.item).toMatchObject({
      kind: 'reminder',
      referenceId,
      transactionId,
      dueAt: r.k.dueAt,
    });
    expect((await timer('expire', expireAt)).item).toBeUndefined();

    moveTo(reminderAt);
    const reminder = await waitForEvent(referenceId, 'consent.expiry.reminder');
    const e = await timer('expire', expireAt);
    expect(e.item).toMatchObject({ kind: 'expire', referenceId, transactionId, dueAt: e.k.dueAt });
    expect(reminder.data).toMatchObject({
      consentId: transactionId,
      purposes: { marketing: true },
    });
    expect(reminder.data.recordIds).toHaveLength(1);
    expect(reminder.data.postback).toBeUndefined();
    await f.waitForWebhook(referenceId, 'consent.expiry.reminder');
    expect(eventsOf(referenceId).map((e) => e.type)).not.toContain('consent.expired');
    const mid = await f.http('GET', `/api/v1/consents/${userId}`, undefined, f.bearer(a));
    expect(mid.body).toMatchObject({ status: 'active', consents: { marketing: true } });

    moveTo(expireAt);
    const expired = await waitForEvent(referenceId, 'consent.expired');
    expect(Date.parse(expired.createdAt)).toBeGreaterThanOrEqual(expireAt);
    expect(Object.keys(expired.data.purposes).sort()).toEqual(['analytics', 'marketing']);
    expect(Date.parse(expired.data.postback!.dueAt) - Date.parse(expired.createdAt)).toBe(
      (72 * 3_600_000) / SCALE,
    );
    const txn = await f.http(
      'GET',
      `/api/public/consents/my-transactions/${transactionId}?referenceId=${referenceId}`,
      undefined,
      f.secret(a),
    );
    expect(txn.body.status).toBe('expired');
    expect(txn.body.records.map((r: { state: string }) => r.state)).toEqual(['expired', 'expired']);

    // Fired again, neither changes anything: no write (same version), no event.
    const before = await transactionItem(referenceId, transactionId);
    await fireAgain('reminder', { referenceId, transactionId });
    await fireAgain('expire', { referenceId, transactionId });
    const after = await transactionItem(referenceId, transactionId);
    expect(after.version).toBe(before.version);
    expect(after.reminderSentAt).toBe(before.reminderSentAt);
    const types = eventsOf(referenceId).map((e) => e.type);
    expect(types.filter((t) => t === 'consent.expiry.reminder')).toHaveLength(1);
    expect(types.filter((t) => t === 'consent.expired')).toHaveLength(1);

    // consent.expired needs a postback within 72 h: silence escalates like any other.
    const hook = await f.waitForWebhook(referenceId, 'consent.expired');
    f.clock.advance(3 * 60_000);
    const d = await f.waitForFlags(hook.dispatchId, ['at_risk', 'breach']);
    expect(d.flagHistory[0]!.at).toBe(
      new Date(Date.parse(expired.data.postback!.dueAt) + 1).toISOString(),
    );
  });
});
