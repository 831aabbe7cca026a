import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb';
import { randomBytes } from 'node:crypto';
import { createTableInput, tableDefs } from '../../infra/definitions/tables.js';
import { DescribeStreamCommand } from '@aws-sdk/client-dynamodb-streams';
import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createKafka } from '../../shared/bus/kafka.js';
import { Producer } from '../../shared/bus/producer.js';
import { creationIds } from '../../shared/domain/consent/carried.js';
import { deriveCreationMessages } from '../../shared/storage/consents/carried.js';
import { createUserConsent } from '../../shared/domain/consent/index.js';
import { STREAM_WRITER_ATTR } from '../../shared/storage/outbox/carrier-stream.js';
import { Outbox } from '../../shared/storage/outbox/outbox.js';
import { Relay, type RelayDeps } from '../../shared/storage/outbox/relay.js';
import { useRecordApi, transactionItem, writingThrough } from './fixture.js';

/**
 * The relay finds a new transaction's item (the carrier of its creation events) through the
 * entities table's DynamoDB stream, so the item is in no index (shared/storage/outbox/carrier-stream.ts).
 * Against the real Kafka and DynamoDB Local and its stream; a stopped writer's producer points
 * at a closed port.
 */
const { rec, uid, post } = useRecordApi('consent-carrier-stream');

/** A relay as the runtime builds one, over `producer` (a process of its own). */
function relayOf(producer: Producer, o: { registry?: Registry; table?: string } = {}) {
  const rt = rec.f.p.rt;
  const deps: RelayDeps = {
    doc: rt.dynamo.doc,
    table: rt.tables.outbox,
    producer,
    log: rt.log,
    registry: o.registry ?? rt.registry,
    keyAttributes: (t) => (t === rt.tables.outbox ? ['id'] : ['pk', 'sk']),
    writerIndex: 'writer',
    streams: { client: rt.dynamo.client, streams: rt.dynamo.streams },
    carriers: [
      {
        table: o.table ?? rt.tables.entities,
        derive: (item) =>
          deriveCreationMessages(item, {
            topic: rt.topics.consentEvents,
            baseUrl: rt.config.PUBLIC_BASE_URL,
          }),
      },
    ],
  };
  return new Relay(deps);
}

/** Runs `work` with a writer that cannot publish (Kafka unreachable), then stops the writer. */
async function withStoppedWriter<T>(work: (writer: Outbox) => Promise<T>): Promise<T> {
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
    return await work(writer);
  } finally {
    writer.abandon();
    await Promise.race([
      dead.close().catch(() => undefined),
      new Promise((r) => setTimeout(r, 2_000)),
    ]);
  }
}

/** A consent whose writer could not publish (Kafka unreachable) and then stopped. */
const createWithStoppedWriter = (userId: string) =>
  withStoppedWriter(async (writer) => ({
    made: await createUserConsent(
      {
        rt: writingThrough(rec.f.p.rt, writer),
        app: rec.a.app,
        actor: { source: 'api', credential: 't' },
      },
      { userId, email: 'stream@shop.example', consents: { analytics: true, marketing: false } },
    ),
    writerId: writer.writerId,
  }));

/** The shards of the entities table's stream. */
async function shardIds(): Promise<string[]> {
  const rt = rec.f.p.rt;
  const arn = (
    await rt.dynamo.client.send(new DescribeTableCommand({ TableName: rt.tables.entities }))
  ).Table!.LatestStreamArn!;
  const shards = (await rt.dynamo.streams.send(new DescribeStreamCommand({ StreamArn: arn })))
    .StreamDescription!.Shards!;
  return shards.map((sh) => sh.ShardId!);
}

const checkpointId = (shard: string) => `stream#${rec.f.p.rt.tables.entities}#${shard}`;

/** The relay's checkpoints in the outbox table, one a shard that has one. */
const checkpointsOf = async () => {
  const rt = rec.f.p.rt;
  const out: Record<string, unknown>[] = [];
  for (const id of await shardIds()) {
    const c = await rt.dynamo.doc.send(
      new GetCommand({
        TableName: rt.tables.outbox,
        Key: { id: checkpointId(id) },
        ConsistentRead: true,
      }),
    );
    if (c.Item) out.push(c.Item);
  }
  return out;
};

/** The sum of a metric's values in `registry`. */
const metricSum = async (registry: Registry, name: string) =>
  (await registry.getSingleMetric(name)?.get())?.values.reduce((n, v) => n + v.value, 0) ?? 0;

/** The key attributes of the entities table's indexes. */
async function indexKeys(): Promise<string[]> {
  const rt = rec.f.p.rt;
  const t = await rt.dynamo.client.send(
    new DescribeTableCommand({ TableName: rt.tables.entities }),
  );
  return (t.Table?.GlobalSecondaryIndexes ?? []).flatMap(
    (ix) => ix.KeySchema?.map((k) => k.AttributeName!) ?? [],
  );
}

describe('carriers found through the entities table’s stream', () => {
  it('a new transaction’s item holds its writer in obxs, which no index is keyed on', async () => {
    const r = await post(rec.a, {
      userId: uid(),
      email: 'live@shop.example',
      consents: { analytics: true },
    });
    expect(r.status).toBe(201);
    const item = (await transactionItem(
      rec.f.p.rt,
      rec.a.app.appId,
      r.body.referenceId,
      r.body.transactionId,
    ))!;
    const writer = rec.f.p.rt.outbox.writerId;
    expect(item[STREAM_WRITER_ATTR]).toMatch(new RegExp(`^${writer}#[0-7]$`));
    expect(item).not.toHaveProperty('obxw');
    expect(item.obxt).toEqual(expect.any(String));
    const keyed = await indexKeys();
    expect(keyed).toContain('duepk');
    expect(keyed).not.toContain(STREAM_WRITER_ATTR);
    expect(keyed).not.toContain('obxt');
    await rec.f.waitForEvents(r.body.referenceId, 2);
  });

  it('the relay publishes a stopped writer’s creation events, found in the stream', async () => {
    const { made, writerId } = await createWithStoppedWriter(uid());
    expect(rec.f.eventsOf(made.referenceId)).toEqual([]);

    expect(await rec.f.p.rt.relay.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(2);
    const events = await rec.f.waitForEvents(made.referenceId, 2);
    const next = creationIds(made);
    expect(events.map((e) => [e.id, e.type])).toEqual([
      [next(), 'consent.created'],
      [next(), 'consent.granted'],
    ]);
    // Taken over: its progress item is gone, and a second pass publishes nothing of it again.
    const progress = await rec.f.p.rt.dynamo.doc.send(
      new GetCommand({
        TableName: rec.f.p.rt.tables.outbox,
        Key: { id: `writer#${writerId}` },
        ConsistentRead: true,
      }),
    );
    expect(progress.Item).toBeUndefined();
    await rec.f.p.rt.relay.relayOnce({ staleMs: 0 });
    await new Promise((r) => setTimeout(r, 500));
    expect(rec.f.eventsOf(made.referenceId)).toHaveLength(2);
  });

  it('a relay that restarts reads on from its checkpoint, which never passes a commit it still holds', async () => {
    const rt = rec.f.p.rt;
    // The first relay sees the writer as live (its heartbeat is recent): it holds the commit
    // and saves a checkpoint at it.
    const first = relayOf(rt.producer);
    const { made } = await createWithStoppedWriter(uid());
    await first.relayOnce({ staleMs: 600_000 });
    expect(rec.f.eventsOf(made.referenceId)).toEqual([]);
    const held = await checkpointsOf();
    expect(held.some((c) => typeof c.at === 'string')).toBe(true);

    // A new relay (a restarted process) starts from that checkpoint and takes the writer over.
    const second = relayOf(rt.producer);
    expect(await second.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(2);
    const events = await rec.f.waitForEvents(made.referenceId, 2);
    const next = creationIds(made);
    expect(events.map((e) => e.id)).toEqual([next(), next()]);
    // Nothing is held any more: the checkpoint moved past the commit.
    const third = relayOf(rt.producer);
    await third.relayOnce({ staleMs: 600_000 });
    const after = await checkpointsOf();
    const seqOf = (c: Record<string, unknown>) => BigInt(String(c.at ?? c.after ?? 0));
    const heldSeq = held.map(seqOf).reduce((a, b) => (a > b ? a : b));
    expect(after.some((c) => typeof c.after === 'string' && seqOf(c) >= heldSeq)).toBe(true);
  });

  it('reads the stream at most every 5 s, and at once when it takes a writer over', async () => {
    const registry = new Registry();
    const relay = relayOf(rec.f.p.rt.producer, { registry });
    const reads = () => metricSum(registry, 'svc_outbox_stream_reads_total');
    await relay.relayOnce({ staleMs: 600_000 });
    expect(await reads()).toBe(1);
    await relay.relayOnce({ staleMs: 600_000 });
    expect(await reads()).toBe(1);
    // A writer stopped: the pass reads the stream again before it takes the writer over.
    const { made } = await createWithStoppedWriter(uid());
    expect(await relay.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(2);
    expect(await reads()).toBe(2);
    const events = await rec.f.waitForEvents(made.referenceId, 2);
    expect(events.map((e) => e.type)).toEqual(['consent.created', 'consent.granted']);
  });

  it('a checkpoint the stream no longer has: the relay says so, counts it and reads on from the oldest record', async () => {
    const rt = rec.f.p.rt;
    const { made } = await createWithStoppedWriter(uid());
    // Every shard's checkpoint names a place before the stream's first record.
    const shards = await shardIds();
    for (const id of shards)
      await rt.dynamo.doc.send(
        new PutCommand({
          TableName: rt.tables.outbox,
          Item: { id: checkpointId(id), at: '0'.repeat(21) },
        }),
      );
    const registry = new Registry();
    const relay = relayOf(rt.producer, { registry });
    expect(await relay.relayOnce({ staleMs: 0 })).toBeGreaterThanOrEqual(2);
    expect(await metricSum(registry, 'svc_outbox_stream_gaps_total')).toBe(shards.length);
    const events = await rec.f.waitForEvents(made.referenceId, 2);
    expect(events.map((e) => e.type)).toEqual(['consent.created', 'consent.granted']);
  });

  it('a carrier table without its stream fails the start check and every relay pass', async () => {
    const rt = rec.f.p.rt;
    const prefix = `t_nostream_${randomBytes(3).toString('hex')}_`;
    const { stream: _, ...withoutStream } = tableDefs.entities;
    await rt.dynamo.client.send(new CreateTableCommand(createTableInput(prefix, withoutStream)));
    const relay = relayOf(rt.producer, { table: `${prefix}entities` });
    await expect(relay.assertStreams()).rejects.toThrow(/has no stream/);
    await expect(relay.relayOnce({ staleMs: 0 })).rejects.toThrow(/has no stream/);
    // The runtime's own relay passes the check: its entities table has its stream.
    await expect(rt.relay.assertStreams()).resolves.toBeUndefined();
  });
});
