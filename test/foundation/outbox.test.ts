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
import { Outbox, startRelay, type OutboxItem } from '../../shared/outbox/outbox.js';
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
    await deadProducer.close();

    // Every change committed; the unpublished half waits in the outbox.
    const pending = await rt.dynamo.doc.send(new ScanCommand({ TableName: rt.tables.outbox }));
    expect((pending.Items ?? []).map((x) => x.id).sort()).toEqual(ids.slice(10).sort());

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

    // "Restart": the relay publishes what was left.
    const relay = startRelay(rt.outbox, { intervalMs: 100, minAgeMs: 0, log: rt.log });
    // A duplicate delivery (published, then the outbox delete was lost) must not apply twice.
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
    await vi.waitFor(async () => {
      const left = await rt.dynamo.doc.send(new ScanCommand({ TableName: rt.tables.outbox }));
      expect(left.Items ?? []).toEqual([]);
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

    // An item in the shape written before (one message at the top level) is relayed too.
    const legacy = `evt_${ulid()}`;
    const m = message(legacy, 0);
    await rt.dynamo.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: rt.tables.outbox,
              Item: {
                id: legacy,
                topic: m.topic,
                key: m.key,
                value: m.value,
                headers: {},
                createdAtMs: m.createdAtMs,
              },
            },
          },
        ],
      }),
    );

    const seen = await collectTopic(rt.kafka, rt.topics.consentEvents);
    try {
      expect(await rt.outbox.relayOnce(0)).toBeGreaterThanOrEqual(3);
      await vi.waitFor(
        () => {
          const ids = seen.messages.map((x) => (x.value as { id: string }).id);
          expect(ids.filter((id) => [first, second, legacy].includes(id))).toHaveLength(3);
          // The commit's two messages keep their order (both carry key principal-0).
          expect(ids.indexOf(first)).toBeLessThan(ids.indexOf(second));
        },
        { timeout: 15_000 },
      );
      await rt.outbox.drain();
      for (const id of [first, legacy]) {
        const left = await rt.dynamo.doc.send(
          new GetCommand({ TableName: rt.tables.outbox, Key: { id }, ConsistentRead: true }),
        );
        expect(left.Item).toBeUndefined();
      }
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

function rtDeps() {
  return { doc: rt.dynamo.doc, table: rt.tables.outbox, log: rt.log, registry: rt.registry };
}
