import {
  GetCommand,
  ScanCommand,
  UpdateCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ulid } from 'ulid';
import { gunzipSync } from 'node:zlib';
import { createKafka } from '../../shared/bus/kafka.js';
import { Producer } from '../../shared/bus/producer.js';
import { serialConsumer } from '../../shared/bus/consumer.js';
import { isConditionFailure } from '../../shared/storage/dynamo.js';
import { STREAM_WRITER_ATTR } from '../../shared/storage/outbox/carrier-stream.js';
import { Outbox, type OutboxItem } from '../../shared/storage/outbox/outbox.js';
import { Relay, startRelay } from '../../shared/storage/outbox/relay.js';
import type { Runtime } from '../../shared/runtime.js';
import { collectTopic } from '../helpers/kafka.js';
import { testRuntime } from '../helpers/stack.js';

let rt: Runtime;

beforeAll(async () => {
  rt = await testRuntime('outbox');
});
afterAll(async () => {
  await rt.close();
});

/** A change to the entities table: one counter item per event, created by the transaction. */
function change(id: string) {
  return {
    Put: {
      TableName: rt.tables.entities,
      Item: { pk: `change#${id}`, sk: 'v', applied: 0 },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  };
}

function message(id: string, i: number): OutboxItem {
  return {
    id,
    topic: rt.topics.consentEvents,
    key: `principal-${i % 3}`,
    value: JSON.stringify({ id, seq: i }),
    createdAtMs: Date.now(),
  };
}

describe('transactional outbox against real Kafka and DynamoDB Local', () => {
  it('loses nothing and applies nothing twice when publishing stops mid-way and restarts', async () => {
    // A producer pointed at a closed port stands for "Kafka went away mid-way".
    const deadKafka = createKafka(rt.config, ['127.0.0.1:1'], rt.log);
    const deadProducer = new Producer(deadKafka, rt.log, { retries: 1 });
    const brokenOutbox = new Outbox({ ...rtDeps(), producer: deadProducer });

    const ids = Array.from({ length: 20 }, () => `evt_${ulid()}`);
    const results: boolean[] = [];
    for (const [i, id] of ids.entries()) {
      const box = i < 10 ? rt.outbox : brokenOutbox;
      results.push((await box.commit([change(id)], [message(id, i)])).published);
    }
    expect(results.slice(0, 10).every(Boolean)).toBe(true);
    expect(results.slice(10).some(Boolean)).toBe(false);
    // The broken writer's process dies: its unpublished half is left to the relay.
    brokenOutbox.abandon();
    await deadProducer.close();

    // Every commit is stored, published or not: nothing is deleted once published.
    const stored = await rt.dynamo.doc.send(
      new ScanCommand({ TableName: rt.tables.outbox, ConsistentRead: true }),
    );
    const storedIds = (stored.Items ?? []).map((x) => x.id as string);
    for (const id of ids) expect(storedIds).toContain(id);
    // The dead writer's progress item names it, with a watermark at or before its first commit
    // (`obxt` starts with the commit's creation time, 15 digits).
    const progress = (stored.Items ?? []).find((x) => x.writer === brokenOutbox.writerId);
    const firstAt = String((stored.Items ?? []).find((x) => x.id === ids[10])?.obxt);
    expect(firstAt).toMatch(/^\d{15}#/);
    expect(progress?.watermark).toBeLessThanOrEqual(Number(firstAt.slice(0, 15)));

    // An idempotent consumer: each event increments its change's counter once, in one
    // transaction with the idempotency claim.
    const consumer = serialConsumer({
      kafka: rt.kafka,
      groupId: `${rt.config.TOPIC_PREFIX}counter`,
      handlers: {
        [rt.topics.consentEvents]: async (event) => {
          const { id } = event as { id: string };
          try {
            await rt.dynamo.doc.send(
              new TransactWriteCommand({
                TransactItems: [
                  rt.processed.claimItem('counter', id),
                  {
                    Update: {
                      TableName: rt.tables.entities,
                      Key: { pk: `change#${id}`, sk: 'v' },
                      UpdateExpression: 'SET applied = applied + :one',
                      ExpressionAttributeValues: { ':one': 1 },
                    },
                  },
                ],
              }),
            );
          } catch (err) {
            if (!isConditionFailure(err)) throw err;
          }
        },
      },
      deadLetterTopic: rt.topics.deadLetter,
      producer: rt.producer,
      log: rt.log,
      registry: rt.registry,
    });
    await consumer.start();

    // The relay (in another process) takes over the stopped writer from its watermark.
    const relay = startRelay(rt.relay, { intervalMs: 100, staleMs: 0, log: rt.log });
    // A duplicate delivery (published twice, as the relay may) must not apply twice.
    await rt.producer.send(ids.slice(0, 5).map((id, i) => message(id, i)));

    const applied = async (id: string) =>
      (
        await rt.dynamo.doc.send(
          new GetCommand({
            TableName: rt.tables.entities,
            Key: { pk: `change#${id}`, sk: 'v' },
            ConsistentRead: true,
          }),
        )
      ).Item?.applied as number;

    await vi.waitFor(
      async () => {
        const counts = await Promise.all(ids.map(applied));
        expect(counts).toEqual(ids.map(() => 1));
      },
      { timeout: 20_000, interval: 200 },
    );
    // Taken over: its progress item is gone, so no later pass publishes it again.
    await vi.waitFor(async () => {
      const left = await rt.dynamo.doc.send(
        new GetCommand({
          TableName: rt.tables.outbox,
          Key: { id: `writer#${brokenOutbox.writerId}` },
          ConsistentRead: true,
        }),
      );
      expect(left.Item).toBeUndefined();
    });
    await relay.stop();
    await consumer.stop();
    // Nothing more arrives after the consumers stopped: counts are still exactly one.
    expect(await Promise.all(ids.map(applied))).toEqual(ids.map(() => 1));
  });

  it("keeps a commit's messages in one outbox item, and the relay publishes them in order", async () => {
    const deadKafka = createKafka(rt.config, ['127.0.0.1:1'], rt.log);
    const deadProducer = new Producer(deadKafka, rt.log, { retries: 1 });
    const brokenOutbox = new Outbox({ ...rtDeps(), producer: deadProducer });
    const first = `evt_${ulid()}`;
    const second = `evt_${ulid()}`;
    const out = await brokenOutbox.commit(
      [change(first)],
      [message(first, 0), { ...message(second, 0), value: JSON.stringify({ id: second }) }],
    );
    expect(out.published).toBe(false);
    brokenOutbox.abandon();
    await deadProducer.close();
    // One item, under the first message's id, holding both.
    const stored = await rt.dynamo.doc.send(
      new GetCommand({ TableName: rt.tables.outbox, Key: { id: first }, ConsistentRead: true }),
    );
    // Compressed: gzip of the messages' JSON.
    const packed = JSON.parse(gunzipSync(stored.Item?.packed as Uint8Array).toString('utf8')) as {
      value: string;
    }[];
    expect(packed.map((m) => JSON.parse(m.value))).toEqual([{ id: first, seq: 0 }, { id: second }]);
    const none = await rt.dynamo.doc.send(
      new GetCommand({ TableName: rt.tables.outbox, Key: { id: second }, ConsistentRead: true }),
    );
    expect(none.Item).toBeUndefined();

    // The writer stopped: a relay takes it over and publishes the item's messages in order.
    const relay = new Relay({ ...rtDeps(), producer: rt.producer, writerIndex: 'writer' });
    const seen = await collectTopic(rt.kafka, rt.topics.consentEvents);
    try {
      expect(await relay.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(2);
      await vi.waitFor(
        () => {
          const ids = seen.messages.map((x) => (x.value as { id: string }).id);
          expect(ids.filter((id) => [first, second].includes(id))).toHaveLength(2);
          // The commit's two messages keep their order (both carry key principal-0).
          expect(ids.indexOf(first)).toBeLessThan(ids.indexOf(second));
        },
        { timeout: 15_000 },
      );
      // Published, the item stays until its TTL (no delete is written).
      const kept = await rt.dynamo.doc.send(
        new GetCommand({ TableName: rt.tables.outbox, Key: { id: first }, ConsistentRead: true }),
      );
      expect(kept.Item?.expiresAt).toBeGreaterThan(Date.now() / 1000 + 13 * 86_400);
    } finally {
      await seen.stop();
    }
  });

  it('a failed transaction writes neither the change nor its outbox item', async () => {
    const id = `evt_${ulid()}`;
    await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: { pk: `change#${id}`, sk: 'v' },
        UpdateExpression: 'SET applied = :z',
        ExpressionAttributeValues: { ':z': 0 },
      }),
    );
    // The change's condition fails (item exists), so the whole transaction is cancelled.
    await expect(rt.outbox.commit([change(id)], [message(id, 0)])).rejects.toSatisfy(
      isConditionFailure,
    );
    const left = await rt.dynamo.doc.send(
      new GetCommand({ TableName: rt.tables.outbox, Key: { id } }),
    );
    expect(left.Item).toBeUndefined();
  });
});

describe('writers: no delete, own retries, carriers', () => {
  /**
   * Fault injection in front of the real producer: while `down`, every send fails, as when the
   * broker is unreachable; otherwise the real Kafka producer sends.
   */
  function switchable() {
    const state = { down: true, ok: true };
    const producer = {
      get healthy() {
        return state.ok && !state.down;
      },
      markSlow: () => (state.ok = false),
      async send(messages: Parameters<typeof rt.producer.send>[0]) {
        if (state.down) {
          state.ok = false;
          throw new Error('broker unreachable (injected)');
        }
        await rt.producer.send(messages);
        state.ok = true;
      },
    } as unknown as typeof rt.producer;
    return { state, producer };
  }

  it('a live writer publishes its own commits once Kafka is back, and writes nothing for it', async () => {
    const { state, producer } = switchable();
    const writer = new Outbox({ ...rtDeps(), producer }, { retryIntervalMs: 100 });
    const ids = Array.from({ length: 5 }, () => `evt_${ulid()}`);
    const seen = await collectTopic(rt.kafka, rt.topics.consentEvents);
    try {
      for (const [i, id] of ids.entries())
        expect((await writer.commit([change(id)], [message(id, i)])).published).toBe(false);
      const writes = async () =>
        (await rt.registry.getSingleMetricAsString('svc_dynamodb_items_written_total'))
          .split('\n')
          .filter((l) => l.includes(`table="outbox"`) && !l.startsWith('#'))
          .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
      const before = await writes();
      state.down = false;
      await vi.waitFor(
        () => {
          const got = seen.messages.map((x) => (x.value as { id: string }).id);
          for (const id of ids) expect(got).toContain(id);
        },
        { timeout: 15_000 },
      );
      expect(await writer.drain(5_000)).toBe(true);
      // Publishing wrote no outbox item (no delete); only progress saves touch the table.
      const progressSaves = (await writes()) - before;
      expect(progressSaves).toBeLessThan(ids.length + 60);
      for (const id of ids) {
        const item = await rt.dynamo.doc.send(
          new GetCommand({ TableName: rt.tables.outbox, Key: { id }, ConsistentRead: true }),
        );
        expect(item.Item?.obxw).toMatch(new RegExp(`^${writer.writerId}#[0-7]$`));
      }
    } finally {
      await writer.close();
      await seen.stop();
    }
    // A clean shutdown with nothing left deletes its progress item.
    const gone = await rt.dynamo.doc.send(
      new GetCommand({
        TableName: rt.tables.outbox,
        Key: { id: `writer#${writer.writerId}` },
        ConsistentRead: true,
      }),
    );
    expect(gone.Item).toBeUndefined();
  });

  it('a carrier item holds its events (no outbox item); a stopped writer’s are relayed from it through the table’s stream', async () => {
    const { producer } = switchable();
    const writer = new Outbox(
      { ...rtDeps(), producer, keyAttributes: () => ['pk', 'sk'] },
      { retryIntervalMs: 100 },
    );
    const id = `evt_${ulid()}`;
    const out = await writer.commit([change(id)], [message(id, 1)], { carrier: 0 });
    expect(out.published).toBe(false);
    writer.abandon();
    const outboxItem = await rt.dynamo.doc.send(
      new GetCommand({ TableName: rt.tables.outbox, Key: { id }, ConsistentRead: true }),
    );
    expect(outboxItem.Item).toBeUndefined();
    const carried = await rt.dynamo.doc.send(
      new GetCommand({
        TableName: rt.tables.entities,
        Key: { pk: `change#${id}`, sk: 'v' },
        ConsistentRead: true,
      }),
    );
    expect(carried.Item).toMatchObject({
      applied: 0,
      [STREAM_WRITER_ATTR]: expect.stringMatching(new RegExp(`^${writer.writerId}#[0-7]$`)),
    });
    expect(carried.Item).not.toHaveProperty('obxw');
    expect(carried.Item?.obx).toBeInstanceOf(Uint8Array);

    const relay = new Relay({
      ...rtDeps(),
      producer: rt.producer,
      keyAttributes: (t) => (t === rt.tables.outbox ? ['id'] : ['pk', 'sk']),
      carriers: [{ table: rt.tables.entities }],
      streams: { client: rt.dynamo.client, streams: rt.dynamo.streams },
    });
    const seen = await collectTopic(rt.kafka, rt.topics.consentEvents);
    try {
      expect(await relay.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(1);
      await vi.waitFor(
        () => expect(seen.messages.map((x) => (x.value as { id: string }).id)).toContain(id),
        { timeout: 15_000 },
      );
    } finally {
      await seen.stop();
    }
  });

  /**
   * Fault injection in front of the real DynamoDB Local: a transaction whose answer is lost on
   * the way back (it applied; the caller sees a timeout), or that never reached the store.
   */
  function losingAnswers(mode: { now: 'lose-answer' | 'never-sent' | 'pass' }) {
    const timeout = () =>
      Object.assign(new Error('request timed out (injected)'), { name: 'TimeoutError' });
    return {
      send: async (command: unknown) => {
        const isTxn = command instanceof TransactWriteCommand;
        if (isTxn && mode.now === 'never-sent') throw timeout();
        const out = await rt.dynamo.doc.send(command as never);
        if (isTxn && mode.now === 'lose-answer') throw timeout();
        return out;
      },
    } as unknown as typeof rt.dynamo.doc;
  }

  it('a commit whose answer was lost is looked up, found stored, and published; one that never landed is dropped', async () => {
    const mode = { now: 'lose-answer' as 'lose-answer' | 'never-sent' | 'pass' };
    const writer = new Outbox(
      { ...rtDeps(), doc: losingAnswers(mode), producer: rt.producer },
      { retryIntervalMs: 100, unknownSettleMs: 500 },
    );
    const landed = `evt_${ulid()}`;
    const lost = `evt_${ulid()}`;
    const seen = await collectTopic(rt.kafka, rt.topics.consentEvents);
    try {
      await expect(writer.commit([change(landed)], [message(landed, 0)])).rejects.toThrow(
        /injected/,
      );
      mode.now = 'never-sent';
      await expect(writer.commit([change(lost)], [message(lost, 1)])).rejects.toThrow(/injected/);
      mode.now = 'pass';
      // The first applied (its change is there); the second did not.
      const get = async (id: string) =>
        (
          await rt.dynamo.doc.send(
            new GetCommand({
              TableName: rt.tables.entities,
              Key: { pk: `change#${id}`, sk: 'v' },
              ConsistentRead: true,
            }),
          )
        ).Item;
      expect(await get(landed)).toBeDefined();
      expect(await get(lost)).toBeUndefined();
      await vi.waitFor(
        () => expect(seen.messages.map((x) => (x.value as { id: string }).id)).toContain(landed),
        { timeout: 15_000 },
      );
      // Both leave the writer: the stored one published, the absent one dropped after the
      // settle time, so its watermark moves on.
      expect(await writer.drain(10_000)).toBe(true);
      expect(seen.messages.map((x) => (x.value as { id: string }).id)).not.toContain(lost);
    } finally {
      await writer.close();
      await seen.stop();
    }
  });

  it('the relay takes a writer for stopped only once it has itself watched its heartbeat stand still', async () => {
    const { producer } = switchable();
    const writer = new Outbox({ ...rtDeps(), producer }, { retryIntervalMs: 100 });
    const id = `evt_${ulid()}`;
    await writer.commit([change(id)], [message(id, 0)]);
    writer.abandon();
    // Long silent by the clock already, but this relay has not watched it yet.
    await new Promise((r) => setTimeout(r, 400));
    const relay = new Relay({ ...rtDeps(), producer: rt.producer });
    const progress = async () =>
      (
        await rt.dynamo.doc.send(
          new GetCommand({
            TableName: rt.tables.outbox,
            Key: { id: `writer#${writer.writerId}` },
            ConsistentRead: true,
          }),
        )
      ).Item;
    await relay.relayOnce({ staleMs: 300 });
    expect(await progress()).toBeDefined();
    await new Promise((r) => setTimeout(r, 400));
    expect(await relay.relayOnce({ staleMs: 300 })).toBeGreaterThanOrEqual(1);
    expect(await progress()).toBeUndefined();
  });

  it('refuses new commits with 503 and Retry-After once its open commits (maxOpen) wait for Kafka', async () => {
    const { producer } = switchable();
    const writer = new Outbox({ ...rtDeps(), producer }, { retryIntervalMs: 100, maxOpen: 1 });
    try {
      const first = `evt_${ulid()}`;
      expect((await writer.commit([change(first)], [message(first, 0)])).published).toBe(false);
      const second = `evt_${ulid()}`;
      await expect(writer.commit([change(second)], [message(second, 1)])).rejects.toMatchObject({
        code: 'SVC_UNAVAILABLE',
        status: 503,
        retryAfterS: 5,
      });
      // Refused before anything was written.
      const none = await rt.dynamo.doc.send(
        new GetCommand({
          TableName: rt.tables.entities,
          Key: { pk: `change#${second}`, sk: 'v' },
          ConsistentRead: true,
        }),
      );
      expect(none.Item).toBeUndefined();
    } finally {
      writer.abandon();
    }
  });

  it('a carrier must be a Put of the same commit', async () => {
    const id = `evt_${ulid()}`;
    await expect(rt.outbox.commit([change(id)], [message(id, 0)], { carrier: 3 })).rejects.toThrow(
      /carrier/,
    );
  });
});

function rtDeps() {
  return { doc: rt.dynamo.doc, table: rt.tables.outbox, log: rt.log, registry: rt.registry };
}
