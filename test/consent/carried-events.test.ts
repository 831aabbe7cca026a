import { describe, expect, it, vi } from 'vitest';
import { createKafka } from '../../shared/bus/kafka.js';
import { Producer } from '../../shared/bus/producer.js';
import { creationIds } from '../../shared/domain/consent/carried.js';
import { deriveCreationMessages } from '../../shared/storage/consents/carried.js';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import { createUserConsent } from '../../shared/domain/consent/index.js';
import { toView } from '../../shared/domain/consent/model.js';
import { recordUuid } from '../../shared/domain/ids.js';
import { loadTransaction, queryTransactions } from '../../shared/storage/consents/repository.js';
import { Outbox } from '../../shared/storage/outbox/outbox.js';
import { itemBytes } from '../../shared/storage/billing.js';
import { transactionItem, useRecordApi, writingThrough } from './fixture.js';

/**
 * A new transaction's item holds neither its creation events nor its history (carried.ts): the
 * relay rebuilds the events of a writer that stopped from the item, and the first change writes
 * both out. Against the real Kafka and DynamoDB Local; the stopped writer's producer points at a
 * closed port, as when the broker is unreachable.
 */
const { rec, uid, post, put } = useRecordApi('consent-carried-events');

const txnItem = async (referenceId: string, transactionId: string) =>
  (await transactionItem(rec.f.p.rt, rec.a.app.appId, referenceId, transactionId))!;

/** A writer whose every publish fails (Kafka unreachable), stopped once its commit landed. */
async function createWithStoppedWriter(userId: string) {
  const rt = rec.f.p.rt;
  const dead = new Producer(createKafka(rt.config, ['127.0.0.1:1'], rt.log), rt.log, {
    retries: 1,
  });
  const writer = new Outbox(
    {
      doc: rt.dynamo.doc,
      table: rt.tables.outbox,
      producer: dead,
      log: rt.log,
      registry: rt.registry,
      keyAttributes: (t) => (t === rt.tables.outbox ? ['id'] : ['pk', 'sk']),
    },
    { retryIntervalMs: 60_000, publishWaitMs: 200 },
  );
  try {
    return await createUserConsent(
      {
        rt: writingThrough(rec.f.p.rt, writer),
        app: rec.a.app,
        actor: { source: 'api', credential: 'test' },
      },
      { userId, email: 'carried@shop.example', consents: { analytics: true, marketing: false } },
    );
  } finally {
    writer.abandon();
    await Promise.race([
      dead.close().catch(() => undefined),
      new Promise((r) => setTimeout(r, 2_000)),
    ]);
  }
}

const published = (referenceId: string) => rec.f.eventsOf(referenceId);

describe('creation events rebuilt from the transaction item', () => {
  it('a live writer’s published events are what the item rebuilds, byte for byte', async () => {
    const r = await post(rec.a, {
      userId: uid(),
      email: 'live@shop.example',
      consents: { analytics: true, marketing: false },
    });
    expect(r.status).toBe(201);
    const sent = await rec.f.waitForEvents(r.body.referenceId, 2);
    const item = await txnItem(r.body.referenceId, r.body.transactionId);
    expect(item.obxt).toEqual(expect.any(String));
    expect(item).not.toHaveProperty('obx');
    expect(item).not.toHaveProperty('history');
    expect(itemBytes(item)).toBeLessThan(1024);

    const rebuilt = deriveCreationMessages(item, {
      topic: rec.f.p.rt.topics.consentEvents,
      baseUrl: rec.f.p.rt.config.PUBLIC_BASE_URL,
    })!;
    // The messages as Kafka holds them (the collector parsed each value; JSON.stringify of the
    // parse gives back the text the writer's JSON.stringify sent).
    const onKafka = sent.map((e) =>
      rec.f.messages.find((m) => (m.value as { id?: string }).id === e.id)!,
    );
    expect(rebuilt.map((m) => m.value)).toEqual(onKafka.map((m) => JSON.stringify(m.value)));
    expect(rebuilt.map((m) => m.key)).toEqual(onKafka.map((m) => m.key));
    const next = creationIds(r.body);
    expect(sent.map((e) => e.id)).toEqual([next(), next()]);
    // Anything but the transaction as created cannot be rebuilt.
    expect(
      deriveCreationMessages({ ...item, version: 2 }, { topic: 't', baseUrl: 'http://x' }),
    ).toBeUndefined();
  });

  it('the relay publishes a stopped writer’s creation events, rebuilt from the item', async () => {
    const userId = uid();
    const made = await createWithStoppedWriter(userId);
    expect(published(made.referenceId)).toEqual([]);

    expect(await rec.f.p.rt.relay.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(2);
    const events = await rec.f.waitForEvents(made.referenceId, 2);
    const next = creationIds(made);
    expect(events.map((e) => [e.id, e.type, e.data.purposes, e.data.sequence])).toEqual([
      [next(), 'consent.created', { analytics: true, marketing: false }, 1],
      [next(), 'consent.granted', { analytics: true }, 2],
    ]);
    expect(events.map((e) => e.data.state)).toEqual([
      { analytics: 'granted', marketing: 'withdrawn' },
      { analytics: 'granted', marketing: 'withdrawn' },
    ]);
    expect((await txnItem(made.referenceId, made.transactionId)).sequence).toBe(2);
    expect(events.every((e) => e.data.userId === userId && e.environment === 'sandbox')).toBe(true);
  });

  it('a change before the relay came writes the creation events out, as they were created', async () => {
    const userId = uid();
    const made = await createWithStoppedWriter(userId);
    const changed = await put(rec.a, userId, { consents: { analytics: false } });
    expect(changed.status).toBe(200);
    const item = await txnItem(made.referenceId, made.transactionId);
    expect(item.version).toBe(2);
    expect(item.obx).toBeInstanceOf(Uint8Array);
    expect((item.history as { operation: string }[]).map((h) => h.operation)).toEqual([
      'create',
      'create',
      'revoke',
    ]);

    expect(await rec.f.p.rt.relay.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(2);
    const next = creationIds(made);
    const [created, granted] = [next(), next()];
    await vi.waitFor(
      () => {
        const byId = new Map(published(made.referenceId).map((e) => [e.id, e] as const));
        // The creation as it was (analytics granted), not as the item stands now.
        expect(byId.get(created)?.data.purposes).toEqual({ analytics: true, marketing: false });
        expect(byId.get(created)?.data.state).toEqual({
          analytics: 'granted',
          marketing: 'withdrawn',
        });
        expect(byId.get(granted)?.type).toBe('consent.granted');
        const withdrawn = [...byId.values()].find(
          (e: ConsentEvent) => e.type === 'consent.withdrawn',
        );
        expect(withdrawn?.data.purposes).toEqual({ analytics: false });
        // Packed as derived (1, 2), then the change's own, numbered on from them.
        expect([created, granted].map((id) => byId.get(id)?.data.sequence)).toEqual([1, 2]);
        expect(withdrawn?.data.sequence).toBe(3);
        expect(withdrawn?.data.state).toEqual({ analytics: 'withdrawn', marketing: 'withdrawn' });
      },
      { timeout: 15_000, interval: 50 },
    );
  });
});

describe('records stored without what follows from their transaction', () => {
  type Stored = { recordId?: string; purpose: string; updatedAt?: string }[];
  const three = { essential: true, analytics: true, marketing: true };

  it('a three-purpose consent’s item is under 1 KB, and every read gives each record its id and time', async () => {
    const userId = uid();
    const r = await post(rec.a, { userId, email: 'three@shop.example', consents: three });
    expect(r.status).toBe(201);
    const item = await txnItem(r.body.referenceId, r.body.transactionId);
    // Neither the ids (derived from the transaction id by place) nor the times (its createdAt).
    expect(item.records).toEqual([
      { state: 'granted', purpose: 'essential' },
      { state: 'granted', purpose: 'analytics' },
      { state: 'granted', purpose: 'marketing' },
    ]);
    expect(itemBytes(item)).toBeLessThan(1024);
    // Read back as every reader does (loadTransaction, queryTransactions): each record with its time.
    const loaded = (await loadTransaction(rec.f.p.rt, rec.a.app.appId, r.body.transactionId))!;
    const tx = r.body.transactionId as string;
    expect(toView(loaded).records).toEqual(
      ['essential', 'analytics', 'marketing'].map((purpose, i) => ({
        recordId: recordUuid(tx, i + 1),
        purpose,
        state: 'granted',
        updatedAt: item.createdAt,
      })),
    );
    const listed = await queryTransactions(rec.f.p.rt, rec.a.app.appId, r.body.referenceId, 10);
    expect(listed.items[0]!.records).toEqual(loaded.records);
    // The events rebuilt from the item carry the times as the writer sent them.
    const sent = await rec.f.waitForEvents(r.body.referenceId, 2);
    const rebuilt = deriveCreationMessages(item, {
      topic: rec.f.p.rt.topics.consentEvents,
      baseUrl: rec.f.p.rt.config.PUBLIC_BASE_URL,
    })!;
    expect(rebuilt.map((m) => m.value)).toEqual(sent.map((e) => JSON.stringify(e)));
  });

  it('a record that changes keeps its own time; the others still leave theirs out', async () => {
    const userId = uid();
    const r = await post(rec.a, { userId, email: 'change@shop.example', consents: three });
    await new Promise((done) => setTimeout(done, 5));
    const changed = await put(rec.a, userId, { consents: { marketing: false } });
    expect(changed.status).toBe(200);
    const item = await txnItem(r.body.referenceId, r.body.transactionId);
    const stored = new Map((item.records as Stored).map((x) => [x.purpose, x.updatedAt]));
    expect(stored.get('analytics')).toBeUndefined();
    expect(stored.get('essential')).toBeUndefined();
    expect(stored.get('marketing')).toBe(item.updatedAt);
    expect((item.records as Stored).every((x) => x.recordId === undefined)).toBe(true);
    expect(stored.get('marketing')).not.toBe(item.createdAt);
    const loaded = (await loadTransaction(rec.f.p.rt, rec.a.app.appId, r.body.transactionId))!;
    const times = new Map(loaded.records.map((x) => [x.purpose, x.updatedAt]));
    expect(times.get('marketing')).toBe(item.updatedAt);
    expect(times.get('analytics')).toBe(item.createdAt);
    expect(times.get('essential')).toBe(item.createdAt);
  });
});
