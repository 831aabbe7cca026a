import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HandlerContext } from '../../shared/bus/consumer.js';
import type { PostbackMessage } from '../../shared/domain/compliance/postback.js';
import { createApp } from '../../shared/domain/apps.js';
import type { EventType } from '../../shared/domain/consent/events.js';
import type { App } from '../../shared/domain/types.js';
import { recordAttempt } from '../../shared/storage/ledger/attempts.js';
import {
  dispatchPk,
  newDispatchItems,
  type DispatchState,
} from '../../shared/storage/ledger/dispatches.js';
import { dueEntry } from '../../shared/storage/timers/due.js';
import { readGauges, slaCheckEntry } from '../../shared/storage/ledger/flag-entries.js';
import { postbackSk } from '../../shared/storage/ledger/postbacks.js';
import { getDispatch, verifyDispatchChain } from '../../shared/ledger/queries.js';
import type { Runtime } from '../../shared/runtime.js';
import { postbacksHandler } from '../../workers/compliance/handler.js';
import { complianceMetrics } from '../../workers/compliance/metrics.js';
import { testRuntime } from '../helpers/stack.js';
import { consentEvent } from '../postback/fixture.js';
import { ENCRYPTION_KEY } from './fixture.js';

/**
 * The compliance worker's handler against DynamoDB Local, driven message by message with an
 * injected clock: ledger entries, the chain, idempotency, gauge counters, concurrency.
 */
let rt: Runtime;
let app: App;
let nowMs = Date.now();
let handle: ReturnType<typeof postbacksHandler>;
const H = 3_600_000;

beforeAll(async () => {
  rt = await testRuntime('compliance-ledger', {
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
    TIMER_SHARDS: '4',
  });
  app = (
    await createApp(rt, {
      name: 'ledger',
      environment: 'sandbox',
      webhookUrl: 'http://127.0.0.1:9/hooks',
      allowedOrigins: ['https://shop.example'],
      contactEmail: 'ops@shop.example',
    })
  ).app;
  handle = postbacksHandler(rt, { now: () => nowMs, metrics: complianceMetrics(rt.registry) });
});
afterAll(async () => {
  await rt?.close();
});

const ctx = (): HandlerContext => ({
  topic: rt.topics.postbacks,
  partition: 0,
  offset: '0',
  key: undefined,
  headers: {},
  log: rt.log,
});

/** A dispatch as the dispatcher stores it (its retry entry a year away: never attempted here). */
async function dispatch(type: EventType, createdAt = new Date()): Promise<DispatchState> {
  const event = consentEvent(app.appId, type, createdAt);
  const created = newDispatchItems(rt, {
    event,
    body: JSON.stringify(event),
    endpoint: `${app.appId}:webhook`,
    nowMs: createdAt.getTime(),
    due: (id) => dueEntry(id, app.appId, Date.now() + 365 * 86_400_000, 'attempt', 1),
  });
  await rt.dynamo.doc.send(new TransactWriteCommand({ TransactItems: created.items }));
  return created.state;
}

const check = (d: DispatchState, atMs: number) =>
  handle({ type: 'sla.check', dispatchId: d.dispatchId, at: new Date(atMs).toISOString() }, ctx());

function postback(d: DispatchState, receivedAtMs: number, over: Partial<PostbackMessage> = {}) {
  const m: PostbackMessage = {
    type: 'postback',
    dispatchId: d.dispatchId,
    referenceId: d.referenceId,
    status: 'processed',
    completedAt: new Date(receivedAtMs - 1000).toISOString(),
    risk: 'none',
    tags: ['crm'],
    actions: [{ type: 'stop_marketing', result: 'done' }],
    appId: app.appId,
    postbackId: `pb_${ulid(receivedAtMs)}`,
    receivedAt: new Date(receivedAtMs).toISOString(),
    ...over,
  };
  return m;
}

async function timerExists(k: { pk: string; sk: string }) {
  const r = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.timers, Key: { pk: k.pk, sk: k.sk } }),
  );
  return r.Item !== undefined;
}

const flags = async (id: string) => (await getDispatch(rt, id))!.flagHistory;

describe('compliance ledger entries', () => {
  it('walks a silent withdrawal through awaiting, near deadline, at_risk and breach', async () => {
    const created = Date.now();
    const d = await dispatch('consent.withdrawn', new Date(created));
    const dueAt = Date.parse(d.postbackDueAt!);
    // The dispatcher wrote the first check, due at once.
    expect(await timerExists(slaCheckEntry(d.dispatchId, app.appId, created, 4))).toBe(true);

    nowMs = created;
    await check(d, created);
    let g = (await readGauges(rt))['consent.withdrawn']!;
    expect([g.awaiting, g.near]).toEqual([1, 0]);
    const nearAt = dueAt - 0.2 * H;
    expect(await timerExists(slaCheckEntry(d.dispatchId, app.appId, nearAt, 4))).toBe(true);

    nowMs = nearAt;
    await check(d, nearAt);
    g = (await readGauges(rt))['consent.withdrawn']!;
    expect([g.awaiting, g.near]).toEqual([1, 1]);
    expect(await flags(d.dispatchId)).toEqual([]);

    // The worker was down for three hours: both escalations are still recorded, each at its deadline.
    nowMs = created + 3 * H;
    await check(d, dueAt + 1);
    g = (await readGauges(rt))['consent.withdrawn']!;
    expect([g.awaiting, g.near]).toEqual([1, 0]);
    expect(await flags(d.dispatchId)).toEqual([
      { flag: 'at_risk', at: new Date(dueAt + 1).toISOString(), cause: 'sla_missed' },
      { flag: 'breach', at: new Date(dueAt + H + 1).toISOString(), cause: 'sla_breached' },
    ]);
    const stored = await getDispatch(rt, d.dispatchId);
    expect(stored!.complianceFlag).toBe('breach');
    // The API shape keeps the worker's bookkeeping out.
    for (const k of ['awaitingPostback', 'nearDeadline', 'flagCount', 'flagAt'])
      expect(stored).not.toHaveProperty(k);
    // A redelivered check adds nothing.
    await check(d, dueAt + 1);
    expect(await flags(d.dispatchId)).toHaveLength(2);
    expect(await verifyDispatchChain(rt, d.dispatchId)).toEqual({ ok: true, entries: 3 });
  });

  it('records a postback once, chains it after an attempt made from a stale read, and ends awaiting', async () => {
    const created = Date.now();
    const d = await dispatch('consent.withdrawn', new Date(created));
    nowMs = created;
    await check(d, created);
    const before = (await readGauges(rt))['consent.withdrawn']!.awaiting;

    const m = postback(d, created + 60_000);
    nowMs = created + 60_000;
    await handle(m, ctx());
    await handle(m, ctx()); // redelivered
    // The dispatcher read the dispatch before the postback was appended; its write must chain
    // after the postback and flag entries, not fork from the old head.
    const attempt = await recordAttempt(rt, {
      state: d,
      entry: {
        trigger: 'first',
        time: new Date(created + 10).toISOString(),
        durationMs: 5,
        destination: 'http://127.0.0.1:9/hooks',
        statusCode: 200,
        responseExcerpt: 'ok',
        outcome: 'delivered',
      },
      deliveryStatus: 'delivered',
    });
    expect(attempt.result).toBe('recorded');

    const got = (await getDispatch(rt, d.dispatchId))!;
    const { appId: _appId, type: _type, ...body } = m;
    expect(got.postbacks).toEqual([
      { ...body, prevHash: got.entryHash, hash: expect.stringMatching(/^[0-9a-f]{64}$/) },
    ]);
    expect(got.flagHistory).toEqual([{ flag: 'ok', at: m.receivedAt, cause: 'postback' }]);
    expect(got.complianceFlag).toBe('ok');
    expect(got.attempts.map((a) => a.attempt)).toEqual([1]);
    expect(got.attempts[0]!.prevHash).not.toBe(got.entryHash);
    expect(got.headHash).toBe(got.attempts[0]!.hash);
    expect(await verifyDispatchChain(rt, d.dispatchId)).toEqual({ ok: true, entries: 4 });
    expect((await readGauges(rt))['consent.withdrawn']!.awaiting).toBe(before - 1);
  });

  it('keeps one chain when postbacks, checks and attempts race on a dispatch', async () => {
    const created = Date.now();
    const d = await dispatch('data.deleted', new Date(created));
    nowMs = created + 2 * 86_400_000;
    const statuses = ['partial', 'failed', 'deleted'] as const;
    await Promise.all([
      ...statuses.map((status, i) =>
        handle(postback(d, created + (i + 1) * 1000, { status, remark: 'r' }), ctx()),
      ),
      check(d, created + 86_400_000 + 1),
      recordAttempt(rt, {
        state: d,
        entry: {
          trigger: 'first',
          time: new Date(created).toISOString(),
          durationMs: 1,
          destination: 'x',
          responseExcerpt: '',
          outcome: 'failed',
          statusCode: 500,
        },
        deliveryStatus: 'pending',
      }),
    ]);
    const got = (await getDispatch(rt, d.dispatchId))!;
    expect(got.postbacks.map((p) => p.status)).toEqual(['partial', 'failed', 'deleted']);
    expect(got.attempts).toHaveLength(1);
    // Whatever the order of arrival, the flag ends as the latest postback says.
    expect(got.complianceFlag).toBe('ok');
    const check1 = await verifyDispatchChain(rt, d.dispatchId);
    expect(check1).toEqual({ ok: true, entries: 1 + 3 + 1 + got.flagHistory.length });
  });

  it('counts unconfirmed erasures in the gauges and moves them with the flag', async () => {
    const created = Date.now();
    const d = await dispatch('data.deleted', new Date(created));
    const before = (await readGauges(rt))['data.deleted']!.unconfirmed;
    nowMs = created + 31 * 86_400_000;
    await check(d, nowMs);
    expect((await flags(d.dispatchId)).map((f) => f.flag)).toEqual([
      'at_risk',
      'unconfirmed_erasure',
    ]);
    expect((await readGauges(rt))['data.deleted']!.unconfirmed).toBe(before + 1);
    // A critical report outranks it: the dispatch leaves the unconfirmed count.
    await handle(postback(d, nowMs, { status: 'failed', risk: 'critical', remark: 'x' }), ctx());
    expect((await getDispatch(rt, d.dispatchId))!.complianceFlag).toBe('critical');
    expect((await readGauges(rt))['data.deleted']!.unconfirmed).toBe(before);
  });

  it('detects a changed postback entry, a changed flag entry and a forked chain', async () => {
    const created = Date.now();
    const make = async () => {
      const d = await dispatch('consent.withdrawn', new Date(created));
      nowMs = created + 1000;
      await handle(postback(d, created + 1000, { risk: 'medium' }), ctx());
      return (await getDispatch(rt, d.dispatchId))!;
    };
    const a = await make();
    const pbSk = postbackSk(a.postbacks[0]!.receivedAt, a.postbacks[0]!.postbackId);
    await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.ledger,
        Key: { pk: dispatchPk(a.dispatchId), sk: pbSk },
        UpdateExpression: 'SET risk = :r',
        ExpressionAttributeValues: { ':r': 'none' },
      }),
    );
    expect(await verifyDispatchChain(rt, a.dispatchId)).toEqual({
      ok: false,
      at: pbSk,
      reason: 'hash does not match',
    });

    const b = await make();
    const flagItem = await rt.dynamo.doc.send(
      new GetCommand({
        TableName: rt.tables.ledger,
        Key: {
          pk: dispatchPk(b.dispatchId),
          sk: `FLAG#${b.flagHistory[0]!.at}#0001`,
        },
      }),
    );
    expect(flagItem.Item).toMatchObject({ flag: 'at_risk', previous: null, seq: 1 });
    await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.ledger,
        Key: { pk: flagItem.Item!.pk, sk: flagItem.Item!.sk },
        UpdateExpression: 'SET flag = :f',
        ExpressionAttributeValues: { ':f': 'ok' },
      }),
    );
    expect(await verifyDispatchChain(rt, b.dispatchId)).toMatchObject({
      ok: false,
      at: flagItem.Item!.sk,
    });

    const c = await make();
    // A second entry claiming the same predecessor as the postback: a fork.
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.ledger,
        Item: {
          pk: dispatchPk(c.dispatchId),
          sk: 'PB#0000-forged',
          type: 'postback',
          prevHash: c.entryHash,
          hash: 'f'.repeat(64),
        },
      }),
    );
    expect(await verifyDispatchChain(rt, c.dispatchId)).toMatchObject({
      ok: false,
      reason: 'the chain forks here',
    });
  });
});
