import { GetCommand, PutCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { consentEventSchema, type ConsentEvent } from '../../shared/domain/consent/events.js';
import type { StoredTransaction } from '../../shared/domain/consent/model.js';
import {
  keys,
  loadTransactionAt,
  putTransaction,
} from '../../shared/storage/consents/repository.js';
import type { ExpiryKind } from '../../shared/domain/consent/timers.js';
import { expiryEntry } from '../../shared/storage/consents/timers.js';
import {
  DUE_INDEX,
  deleteDerivedDue,
  leaseDerivedDue,
  listDerivedDue,
  releaseDerivedDue,
} from '../../shared/storage/timers/derived.js';
import { bucketOf, shardOf, type DueKey } from '../../shared/storage/timers/due.js';
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

/**
 * Waits for the event. After a clock jump of hours, the sweep first walks every due-index
 * bucket the clock passed (60 a sweep, shared/storage/timers/due.ts): give it `timeoutMs`.
 */
async function waitForEvent(referenceId: string, type: ConsentEvent['type'], timeoutMs = 15_000) {
  return vi.waitFor(
    () => {
      const e = eventsOf(referenceId).find((x) => x.type === type);
      expect(e, type).toBeDefined();
      return e!;
    },
    { timeout: timeoutMs, interval: 50 },
  );
}

/** How long a timer may take to fire after a jump of hours, with other test files running. */
const AFTER_JUMP_MS = 45_000;

/** Moves the workers' clock to just after `ms`. */
const moveTo = (ms: number) => f.clock.advance(Math.max(0, ms + 500 - f.clock.now()));

async function transactionItem(
  referenceId: string,
  transactionId: string,
  app: PipelineApp = a,
): Promise<Record<string, unknown>> {
  const r = await f.rt.dynamo.doc.send(
    new GetCommand({
      TableName: f.rt.tables.entities,
      Key: keys.transaction(app.appId, referenceId, transactionId),
      ConsistentRead: true,
    }),
  );
  return r.Item!;
}

/** The timers-table item at `k`, if any. */
async function timersItem(k: DueKey) {
  const r = await f.rt.dynamo.doc.send(
    new GetCommand({
      TableName: f.rt.tables.timers,
      Key: { pk: k.pk, sk: k.sk },
      ConsistentRead: true,
    }),
  );
  return r.Item;
}

/** What the `due` index of `entities` holds in the partition of `k`. */
async function indexed(k: DueKey) {
  const r = await f.rt.dynamo.doc.send(
    new QueryCommand({
      TableName: f.rt.tables.entities,
      IndexName: DUE_INDEX,
      KeyConditionExpression: 'duepk = :pk',
      ExpressionAttributeValues: { ':pk': k.pk },
    }),
  );
  return r.Items ?? [];
}

const DUE_ATTRS = /"(duepk|duesk|duekind|dueLeaseUntil|dueLeaseToken)"/;

async function createConsent(app: PipelineApp, userId: string, consents: Record<string, boolean>) {
  const created = await f.http(
    'POST',
    '/api/v1/consents',
    { userId, email: `${userId}@mail.example`, consents },
    f.bearer(app),
  );
  expect(created.status).toBe(201);
  return created.body as {
    referenceId: string;
    transactionId: string;
    createdAt: string;
  };
}

/** Puts a timer due now again and waits until a worker has fired (and removed) it. */
async function fireAgain(kind: ExpiryKind, t: { referenceId: string; transactionId: string }) {
  const e = expiryEntry(kind, { appId: a.appId, ...t }, f.clock.now(), f.rt.config.TIMER_SHARDS);
  const done = await f.metric('svc_timers_fired_total', { kind, outcome: 'done' });
  await f.rt.dynamo.doc.send(new PutCommand({ TableName: f.rt.tables.timers, Item: { ...e } }));
  // Fired by the next sweep (every 100 ms); a CI run beside other files took over 10 s.
  await f.waitForMetric('svc_timers_fired_total', { kind, outcome: 'done' }, done + 1, 30_000);
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
    // The reminder's timer is carried by the transaction item itself, at the compressed instant,
    // under the keys it would have in the timers table (which holds nothing for it); the
    // expiry's is written to the timers table when the reminder fires.
    const timer = async (kind: 'reminder' | 'expire', at: number) => {
      const k = expiryEntry(kind, { appId: a.appId, referenceId, transactionId }, at, 8);
      return { k, item: await timersItem(k) };
    };
    const r = await timer('reminder', reminderAt);
    expect(r.item).toBeUndefined();
    expect(await transactionItem(referenceId, transactionId)).toMatchObject({
      duepk: r.k.pk,
      duesk: r.k.sk,
      duekind: 'reminder',
    });
    expect((await timer('expire', expireAt)).item).toBeUndefined();

    moveTo(reminderAt);
    const reminder = await waitForEvent(referenceId, 'consent.expiry.reminder', AFTER_JUMP_MS);
    // Fired, the derived entry is gone from the transaction (and so from the index).
    await vi.waitFor(
      async () =>
        expect(JSON.stringify(await transactionItem(referenceId, transactionId))).not.toMatch(
          DUE_ATTRS,
        ),
      { timeout: 10_000, interval: 50 },
    );
    const e = await timer('expire', expireAt);
    expect(e.item).toMatchObject({ kind: 'expire', referenceId, transactionId, dueAt: e.k.dueAt });
    expect(reminder.data).toMatchObject({
      consentId: transactionId,
      purposes: { marketing: true },
    });
    expect(reminder.data.recordIds).toHaveLength(1);
    expect(reminder.data.postback).toBeUndefined();
    // After consent.created (1) and consent.granted (2), through the reminder's own write.
    expect(reminder.data.sequence).toBe(3);
    expect(reminder.data.state).toEqual({ marketing: 'granted', analytics: 'withdrawn' });
    expect((await transactionItem(referenceId, transactionId)).sequence).toBe(3);
    await f.waitForWebhook(referenceId, 'consent.expiry.reminder');
    expect(eventsOf(referenceId).map((e) => e.type)).not.toContain('consent.expired');
    const mid = await f.http('GET', `/api/v1/consents/${userId}`, undefined, f.bearer(a));
    expect(mid.body).toMatchObject({ status: 'active', consents: { marketing: true } });

    moveTo(expireAt);
    const expired = await waitForEvent(referenceId, 'consent.expired', AFTER_JUMP_MS);
    expect(Date.parse(expired.createdAt)).toBeGreaterThanOrEqual(expireAt);
    expect(Object.keys(expired.data.purposes).sort()).toEqual(['analytics', 'marketing']);
    expect(expired.data.sequence).toBe(4);
    expect(expired.data.state).toEqual({ marketing: 'expired', analytics: 'expired' });
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
    expect(after.sequence).toBe(4);
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
    // Each clock jump (about 2.2 h of due-index buckets, a minute each, in 8 shards) is walked
    // 60 buckets a sweep (shared/storage/timers/due.ts, CATCH_UP_BUCKETS): seconds of real queries on
    // DynamoDB Local, 16 to 21 s in all here alone, more beside other test files (one CI run
    // took over 15 s for the second jump alone).
  }, 150_000);
});

describe('the first timer derived from the transaction item', () => {
  it('is leased, given back and removed on the item itself, under its own conditions', async () => {
    // Scale 1: the reminder is 335 days away, beyond the workers' clock for the whole file.
    const slow = await f.createApp(1);
    const { referenceId, transactionId, createdAt } = await createConsent(slow, 'lease-user', {
      marketing: true,
    });
    const reminderAt = Date.parse(createdAt) + 335 * DAY_MS;
    const k = expiryEntry(
      'reminder',
      { appId: slow.appId, referenceId, transactionId },
      reminderAt,
      f.rt.config.TIMER_SHARDS,
    );
    expect(await timersItem(k)).toBeUndefined();
    // The index lists it in its bucket and shard once due, naming the transaction item.
    const shard = shardOf(`reminder:${slow.appId}:${transactionId}`, f.rt.config.TIMER_SHARDS);
    const list = (nowMs: number) =>
      listDerivedDue(f.rt, f.rt.tables.entities, bucketOf(reminderAt), shard, nowMs, 100, 'expiry');
    expect(await list(reminderAt - 1)).toEqual([]);
    const [e] = await list(reminderAt);
    const item = keys.transaction(slow.appId, referenceId, transactionId);
    expect(e).toEqual({
      pk: k.pk,
      sk: k.sk,
      dueAt: k.dueAt,
      kind: 'reminder',
      appId: slow.appId,
      referenceId,
      transactionId,
      from: { table: f.rt.tables.entities, ...item },
    });
    // Only what the sweep needs is projected.
    expect(Object.keys((await indexed(k))[0]!).sort()).toEqual(
      ['appId', 'duekind', 'duepk', 'duesk', 'pk', 'referenceId', 'sk', 'transactionId'].sort(),
    );
    const entry = { sk: e!.sk, from: e!.from! };
    const now = f.clock.now();

    // One lease at a time; an entry the item no longer carries cannot be leased.
    expect(await leaseDerivedDue(f.rt, entry, now, 60_000, 'one')).toBe('one');
    expect(await leaseDerivedDue(f.rt, entry, now, 60_000, 'two')).toBeUndefined();
    expect(await leaseDerivedDue(f.rt, { ...entry, sk: 'other' }, now + 120_000, 1, 't')).toBe(
      undefined,
    );
    // A rewrite loaded before the lease fails (and is retried on a fresh read by the writer);
    // one loaded with the lease keeps it.
    const leased = (await loadTransactionAt(f.rt, slow.appId, referenceId, transactionId))!;
    expect(leased).toMatchObject({ duesk: k.sk, dueLeaseToken: 'one' });
    const stale: StoredTransaction = { ...leased };
    delete stale.dueLeaseToken;
    delete stale.dueLeaseUntil;
    await expect(
      f.rt.dynamo.doc.send(new PutCommand(putTransaction(f.rt, stale, stale.version).Put!)),
    ).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
    const put = await f.http(
      'PUT',
      `/api/v1/consents/lease-user`,
      { consents: { analytics: true } },
      f.bearer(slow),
    );
    expect(put.status).toBe(200);
    expect(JSON.stringify(put.body)).not.toMatch(DUE_ATTRS);
    expect(await transactionItem(referenceId, transactionId, slow)).toMatchObject({
      version: 2,
      duesk: k.sk,
      dueLeaseToken: 'one',
    });
    // An expired lease can be taken over; a release needs the current token.
    expect(await leaseDerivedDue(f.rt, entry, now + 61_000, 60_000, 'two')).toBe('two');
    await releaseDerivedDue(f.rt, entry, 'one');
    expect(await transactionItem(referenceId, transactionId, slow)).toMatchObject({
      dueLeaseToken: 'two',
    });
    await releaseDerivedDue(f.rt, entry, 'two');
    expect(await transactionItem(referenceId, transactionId, slow)).not.toHaveProperty(
      'dueLeaseToken',
    );

    // Removing needs the same entry; then the item carries none and the index lists none.
    await deleteDerivedDue(f.rt, { ...entry, sk: 'other' });
    expect(await transactionItem(referenceId, transactionId, slow)).toMatchObject({ duesk: k.sk });
    await deleteDerivedDue(f.rt, entry);
    const after = await transactionItem(referenceId, transactionId, slow);
    expect(JSON.stringify(after)).not.toMatch(DUE_ATTRS);
    expect(after).toMatchObject({ version: 2, records: expect.any(Array) });
    expect(await list(reminderAt)).toEqual([]);
    expect(await leaseDerivedDue(f.rt, entry, now + 200_000, 60_000, 'three')).toBeUndefined();
    // A rewrite of an item whose entry was removed does not bring it back.
    await expect(
      f.rt.dynamo.doc.send(new PutCommand(putTransaction(f.rt, leased, leased.version + 1).Put!)),
    ).rejects.toMatchObject({ name: 'ConditionalCheckFailedException' });
  });

  it('survives a change before it fires, fires through the sweep, then leaves the index', async () => {
    // Scale 1000: the reminder is about 8 h away, ahead of where the first test left the clock.
    const mid = await f.createApp(1000);
    const userId = 'changed-before-reminder';
    const { referenceId, transactionId, createdAt } = await createConsent(mid, userId, {
      marketing: true,
      analytics: false,
    });
    const reminderAt = Math.ceil(Date.parse(createdAt) + (335 * DAY_MS) / 1000);
    expect(reminderAt).toBeGreaterThan(f.clock.now() + 60_000);
    const k = expiryEntry(
      'reminder',
      { appId: mid.appId, referenceId, transactionId },
      reminderAt,
      f.rt.config.TIMER_SHARDS,
    );
    const before = await transactionItem(referenceId, transactionId, mid);
    expect(before).toMatchObject({ duepk: k.pk, duesk: k.sk, duekind: 'reminder' });
    expect(await timersItem(k)).toBeUndefined();

    const put = await f.http(
      'PUT',
      `/api/v1/consents/${userId}`,
      { consents: { analytics: true } },
      f.bearer(mid),
    );
    expect(put.status).toBe(200);
    const changed = await transactionItem(referenceId, transactionId, mid);
    expect(changed).toMatchObject({
      version: 2,
      duepk: k.pk,
      duesk: k.sk,
      duekind: 'reminder',
    });
    expect(changed).not.toHaveProperty('dueLeaseToken');
    expect((await indexed(k)).map((i) => i.sk)).toContain(`TXN#${transactionId}`);
    // None of it reaches a caller.
    const reads = [
      await f.http('GET', `/api/v1/consents/${userId}`, undefined, f.bearer(mid)),
      await f.http(
        'GET',
        `/api/public/consents/my-transactions/${transactionId}?referenceId=${referenceId}`,
        undefined,
        f.secret(mid),
      ),
      await f.http(
        'GET',
        `/api/public/consents/my-transactions?referenceId=${referenceId}`,
        undefined,
        f.secret(mid),
      ),
    ];
    for (const r of reads) {
      expect(r.status).toBe(200);
      expect(JSON.stringify(r.body)).not.toMatch(DUE_ATTRS);
    }

    moveTo(reminderAt);
    const reminder = await waitForEvent(referenceId, 'consent.expiry.reminder', AFTER_JUMP_MS);
    expect(reminder.data).toMatchObject({
      consentId: transactionId,
      purposes: { marketing: true, analytics: true },
    });
    // The reminder wrote the expiry to the timers table; its own entry left the item and index.
    const expire = expiryEntry(
      'expire',
      { appId: mid.appId, referenceId, transactionId },
      Math.ceil(Date.parse(createdAt) + (365 * DAY_MS) / 1000),
      f.rt.config.TIMER_SHARDS,
    );
    expect(await timersItem(expire)).toMatchObject({ kind: 'expire', transactionId });
    await vi.waitFor(
      async () => {
        const now = await transactionItem(referenceId, transactionId, mid);
        expect(JSON.stringify(now)).not.toMatch(DUE_ATTRS);
        expect(now.reminderSentAt).toBeDefined();
        expect((await indexed(k)).map((i) => i.sk)).not.toContain(`TXN#${transactionId}`);
      },
      { timeout: 10_000, interval: 50 },
    );
    expect(eventsOf(referenceId).filter((e) => e.type === 'consent.expiry.reminder')).toHaveLength(
      1,
    );
  });
});
