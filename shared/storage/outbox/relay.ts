import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import type { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import { BatchGetCommand, DeleteCommand, GetCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { Counter, type Registry } from 'prom-client';
import { backoffMs } from '../../backoff.js';
import type { Logger } from '../../logger.js';
import { getOrCreate } from '../../metrics.js';
import { isConditionFailure, updateIfHolds } from '../dynamo.js';
import { CarrierStream } from './carrier-stream.js';
import {
  ATTR,
  PROGRESS_PREFIX,
  WRITERS,
  WRITER_SHARDS,
  atKey,
  envelopeOf,
  publishedCounter,
  type CarrierSource,
  type Envelope,
  type OutboxTableDeps,
} from './commits.js';

export interface RelayDeps extends OutboxTableDeps {
  /** The outbox table's index over `obxw` / `obxt` (default `writer`). */
  writerIndex?: string;
  /** Tables whose items carry events, found through their streams. */
  carriers?: CarrierSource[];
  /** The clients the carrier tables' streams are read with (needed with `carriers`). */
  streams?: { client: DynamoDBClient; streams: DynamoDBStreamsClient };
  /** This process's own writer (`Outbox.self`), which the relay never takes over. */
  self?: { writerId: string; watermark(): number };
}

export interface RelayOptions {
  /** Commits one relay step publishes at once. */
  relayBatch?: number;
  /** A writer whose heartbeat stood still this long is taken for stopped. */
  staleMs?: number;
}

function relayMetrics(registry: Registry) {
  return {
    published: publishedCounter(registry),
    passes: getOrCreate(
      registry,
      'svc_outbox_relay_passes_total',
      () =>
        new Counter({
          name: 'svc_outbox_relay_passes_total',
          help: 'Relay passes by result (ok, kafka_unavailable, failed)',
          labelNames: ['result'],
          registers: [registry],
        }),
    ),
    recovered: getOrCreate(
      registry,
      'svc_outbox_writers_recovered_total',
      () =>
        new Counter({
          name: 'svc_outbox_writers_recovered_total',
          help: 'Writers that stopped (no progress within OUTBOX_WRITER_STALE_MS) whose events the relay published from their watermark',
          registers: [registry],
        }),
    ),
  };
}

/** What a writer's progress item (undefined: gone) says of its commits the stream showed. */
function settlement(
  p: Record<string, unknown> | undefined,
): Parameters<CarrierStream['settle']>[1] {
  if (!p) return { gone: true };
  return {
    below: atKey(Number(p.watermark), ''),
    ...(typeof p.after === 'string' ? { after: p.after } : {}),
  };
}

/**
 * Publishes the commits of writers that stopped (shared/storage/outbox/outbox.ts, `Outbox`). Each writer
 * saves a progress item with its watermark and a heartbeat; a writer whose heartbeat this relay
 * has watched stand still is taken over: its outbox items are found through the outbox table's
 * `writer` index, its carriers through their tables' streams (`CarrierStream`), and both are
 * published from its watermark on, in creation order, before its progress item is deleted.
 */
export class Relay {
  private readonly m;
  /** Each writer's heartbeat as last read, and since when (this process's clock) it has not changed. */
  private readonly observed = new Map<string, { beat: number; since: number }>();

  constructor(
    private readonly d: RelayDeps,
    private readonly o: RelayOptions = {},
  ) {
    if (d.carriers?.length && !d.streams)
      throw new Error('carrier tables are found through their streams: give the streams client');
    this.m = relayMetrics(d.registry);
  }

  /**
   * One relay pass: for every writer whose heartbeat this relay has seen unchanged for
   * `staleMs` (it stopped), publishes its commits from its watermark on, a bounded batch at a
   * time, moving its watermark after each batch, then deletes its progress item. Stops at the
   * first batch Kafka does not take. Returns how many messages were published.
   */
  async relayOnce(o: { staleMs?: number; now?: number } = {}): Promise<number> {
    try {
      return await this.relayPass(o.staleMs ?? this.o.staleMs ?? 10_000, o.now ?? Date.now());
    } catch (err) {
      this.observed.clear();
      this.m.passes.inc({ result: 'failed' });
      throw err;
    }
  }

  /**
   * Fails unless every carrier table has its stream on (the process's start calls it after
   * `applyTables`): without it the relay could not find a stopped writer's carriers.
   */
  async assertStreams(): Promise<void> {
    for (const c of this.d.carriers ?? []) {
      const t = await this.d.streams!.client.send(new DescribeTableCommand({ TableName: c.table }));
      if (t.Table?.StreamSpecification?.StreamEnabled !== true)
        throw new Error(
          `table ${c.table} has no stream: the outbox relay finds its carriers through it (infra/definitions/tables.ts)`,
        );
    }
  }

  /** The relay's readers of the carrier tables' streams, made at its first pass. */
  private streamReaders: { src: CarrierSource; reader: CarrierStream }[] | undefined;

  private readers(): { src: CarrierSource; reader: CarrierStream }[] {
    if (this.streamReaders) return this.streamReaders;
    const clients = this.d.streams;
    this.streamReaders = (this.d.carriers ?? []).map((src) => ({
      src,
      reader: new CarrierStream({
        client: clients!.client,
        streams: clients!.streams,
        doc: this.d.doc,
        table: src.table,
        keys: this.d.keyAttributes?.(src.table) ?? ['pk', 'sk'],
        checkpointTable: this.d.table,
        log: this.d.log,
        registry: this.d.registry,
      }),
    }));
    return this.streamReaders;
  }

  private async relayPass(staleMs: number, now: number): Promise<number> {
    let sent = 0;
    // The streams are read before the progress items: a commit read here whose writer's
    // watermark (read after) has passed it was published. At most every 5 s, unless a writer is
    // to be taken over (below).
    const readers = this.readers();
    const read = async (force: boolean) => {
      let caughtUp = true;
      let fresh = true;
      for (const r of readers) {
        const x = await r.reader.poll(force);
        caughtUp &&= x.caughtUp;
        fresh &&= x.read;
      }
      return { caughtUp, fresh };
    };
    let streams = await read(false);
    const writers = await this.listWriters();
    for (const w of this.observed.keys()) if (!writers.includes(w)) this.observed.delete(w);
    await this.settleUnlisted(readers, writers);
    for (const w of writers) {
      const self = this.d.self;
      if (w === self?.writerId) {
        for (const r of readers) r.reader.settle(w, { below: atKey(self.watermark(), '') });
        continue;
      }
      const p = await this.progressOf(w);
      for (const r of readers) r.reader.settle(w, settlement(p));
      if (!p || !this.stopped(w, p, now, staleMs)) continue;
      // Stopped: the streams are read in this pass, after it stopped, so they hold all of its
      // commits; a read short of its end may not yet.
      if (!streams.fresh) {
        streams = await read(true);
        for (const r of readers) r.reader.settle(w, settlement(p));
      }
      if (!streams.caughtUp) continue;
      const r = await this.recoverWriter(w, p);
      sent += r.sent;
      if (!r.ok) {
        this.m.passes.inc({ result: 'kafka_unavailable' });
        return sent;
      }
    }
    for (const r of readers) await r.reader.saveCheckpoints();
    this.m.passes.inc({ result: 'ok' });
    if (sent > 0) this.d.log.info({ sent }, 'outbox relay published events of stopped writers');
    return sent;
  }

  private async progressOf(w: string): Promise<Record<string, unknown> | undefined> {
    return (
      await this.d.doc.send(
        new GetCommand({
          TableName: this.d.table,
          Key: { id: `${PROGRESS_PREFIX}${w}` },
          ConsistentRead: true,
        }),
      )
    ).Item;
  }

  /**
   * Stopped: its heartbeat has not moved for `staleMs` as this relay saw it, on its own clock,
   * with the store answering all along (a pass that fails starts the watch again). So no clocks
   * of two machines are compared, and a store outage, during which no writer can save progress,
   * does not make every writer look stopped. 0: it closed with commits left over.
   */
  private stopped(w: string, p: Record<string, unknown>, now: number, staleMs: number): boolean {
    const beat = Number(p.heartbeatAt);
    let seen = this.observed.get(w);
    if (seen?.beat !== beat) this.observed.set(w, (seen = { beat, since: now }));
    return beat === 0 || now - seen.since >= staleMs;
  }

  /**
   * Writers the streams hold commits of that the (eventually consistent) index did not list:
   * gone (closed with nothing left, or taken over), or too new to be listed yet.
   */
  private async settleUnlisted(
    readers: { reader: CarrierStream }[],
    writers: readonly string[],
  ): Promise<void> {
    const unlisted = new Set(readers.flatMap((r) => r.reader.writers()));
    for (const w of unlisted) {
      if (w === this.d.self?.writerId || writers.includes(w)) continue;
      const s = settlement(await this.progressOf(w));
      for (const r of readers) r.reader.settle(w, s);
    }
  }

  private async listWriters(): Promise<string[]> {
    const out: string[] = [];
    let start: Record<string, unknown> | undefined;
    do {
      const page = await this.d.doc.send(
        new QueryCommand({
          TableName: this.d.table,
          IndexName: this.d.writerIndex ?? 'writer',
          KeyConditionExpression: '#w = :w',
          ExpressionAttributeNames: { '#w': ATTR.writer },
          ExpressionAttributeValues: { ':w': WRITERS },
          ExclusiveStartKey: start,
        }),
      );
      for (const i of page.Items ?? []) out.push(String(i[ATTR.at]));
      start = page.LastEvaluatedKey;
    } while (start);
    return out;
  }

  /** Publishes a stopped writer's commits after its watermark, in creation order. */
  private async recoverWriter(
    w: string,
    p: Record<string, unknown>,
  ): Promise<{ sent: number; ok: boolean }> {
    const limit = this.o.relayBatch ?? 500;
    const seenBeat = Number(p.heartbeatAt);
    let after = typeof p.after === 'string' ? p.after : undefined;
    const from = atKey(Number(p.watermark), '');
    let sent = 0;
    for (;;) {
      const found = await this.indexedCommits(w, after, from, limit);
      for (const r of this.readers())
        for (const h of r.reader.heldFor(w, after).slice(0, limit))
          found.push({ table: r.src.table, key: h.key, at: h.at });
      found.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
      const batch = found.slice(0, limit);
      if (batch.length === 0) {
        const deleted = await this.d.doc
          .send(
            new DeleteCommand({
              TableName: this.d.table,
              Key: { id: `${PROGRESS_PREFIX}${w}` },
              ConditionExpression: 'heartbeatAt = :hb',
              ExpressionAttributeValues: { ':hb': seenBeat },
            }),
          )
          .then(
            () => true,
            (err: unknown) => {
              if (!isConditionFailure(err)) throw err;
              return false;
            },
          );
        // Came back meanwhile (its heartbeat moved): it publishes its own commits.
        if (deleted) for (const r of this.readers()) r.reader.settle(w, { gone: true });
        this.m.recovered.inc();
        this.d.log.warn({ writer: w, sent }, 'outbox relay took over a stopped writer');
        return { sent, ok: true };
      }
      const envelopes = await this.fetchEnvelopes(batch);
      const messages = envelopes.flatMap((e) => e.messages);
      try {
        if (messages.length > 0) await this.d.producer.send(messages);
      } catch (err) {
        this.d.log.warn({ err, writer: w, count: messages.length }, 'outbox relay publish failed');
        return { sent, ok: false };
      }
      this.m.published.inc({ path: 'relay' }, messages.length);
      sent += messages.length;
      after = batch[batch.length - 1]!.at;
      const moved = await updateIfHolds(this.d.doc, {
        TableName: this.d.table,
        Key: { id: `${PROGRESS_PREFIX}${w}` },
        UpdateExpression: 'SET #after = :after',
        ConditionExpression: 'heartbeatAt = :hb',
        ExpressionAttributeNames: { '#after': 'after' },
        ExpressionAttributeValues: { ':after': after, ':hb': seenBeat },
      });
      // The writer came back (a new heartbeat): it publishes its own commits again.
      if (!moved) return { sent, ok: true };
      for (const r of this.readers()) r.reader.settle(w, { after });
    }
  }

  /** A writer's outbox items after `after` (from `from` on when undefined), by its index. */
  private async indexedCommits(
    w: string,
    after: string | undefined,
    from: string,
    limit: number,
  ): Promise<{ table: string; key: Record<string, unknown>; at: string }[]> {
    const found: { table: string; key: Record<string, unknown>; at: string }[] = [];
    for (let s = 0; s < WRITER_SHARDS; s++) {
      const page = await this.d.doc.send(
        new QueryCommand({
          TableName: this.d.table,
          IndexName: this.d.writerIndex ?? 'writer',
          KeyConditionExpression:
            after === undefined ? '#w = :w AND #at >= :from' : '#w = :w AND #at > :from',
          ExpressionAttributeNames: { '#w': ATTR.writer, '#at': ATTR.at },
          ExpressionAttributeValues: { ':w': `${w}#${s}`, ':from': after ?? from },
          Limit: limit,
        }),
      );
      for (const i of page.Items ?? [])
        found.push({ table: this.d.table, key: { id: i.id }, at: String(i[ATTR.at]) });
    }
    return found;
  }

  /** The envelopes stored in these items (consistent reads, 100 keys a request), in order. */
  private async fetchEnvelopes(
    refs: { table: string; key: Record<string, unknown>; at: string }[],
  ): Promise<Envelope[]> {
    const byAt = new Map<string, Envelope>();
    for (let i = 0; i < refs.length; i += 100) {
      const chunk = refs.slice(i, i + 100);
      let request: Record<string, { Keys: Record<string, unknown>[]; ConsistentRead: boolean }> =
        {};
      for (const r of chunk) {
        request[r.table] ??= { Keys: [], ConsistentRead: true };
        request[r.table]!.Keys.push(r.key);
      }
      for (let round = 0; Object.keys(request).length > 0; round++) {
        if (round > 0)
          await new Promise((r) => setTimeout(r, backoffMs(round, { baseMs: 50, maxMs: 1_000 })));
        const res = await this.d.doc.send(new BatchGetCommand({ RequestItems: request }));
        for (const [table, items] of Object.entries(res.Responses ?? {})) {
          const derive = this.d.carriers?.find((c) => c.table === table)?.derive;
          for (const item of items) {
            const at: unknown = item[ATTR.at];
            if (typeof at === 'string') byAt.set(at, envelopeOf(item, derive));
          }
        }
        request = (res.UnprocessedKeys ?? {}) as typeof request;
      }
    }
    // An item that no longer holds the commit (gone, or scrubbed of the events it carried) is
    // skipped.
    return refs.flatMap((r) => byAt.get(r.at) ?? []);
  }
}

/** Runs `relayOnce` every `intervalMs` until stopped (the relay worker, workers/relay). */
export function startRelay(
  relay: Pick<Relay, 'relayOnce'>,
  o: { intervalMs: number; staleMs?: number; log: Logger },
) {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  let stopped = false;
  let failures = 0;
  const tick = () => {
    running = relay
      .relayOnce(o.staleMs === undefined ? {} : { staleMs: o.staleMs })
      .then(
        () => (failures = 0),
        (err: unknown) => {
          failures++;
          o.log.warn({ err, failures }, 'outbox relay pass failed');
        },
      )
      .finally(() => {
        // A failing store is not hammered: the pause grows to 10 intervals at most.
        if (!stopped) timer = setTimeout(tick, o.intervalMs * Math.min(1 + failures, 10));
      });
  };
  timer = setTimeout(tick, 0);
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
