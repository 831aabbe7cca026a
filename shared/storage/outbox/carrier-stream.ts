import { DescribeTableCommand, type DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type DynamoDBStreamsClient,
  type GetShardIteratorCommandInput,
  type _Record,
} from '@aws-sdk/client-dynamodb-streams';
import { GetCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from '../../logger.js';
import { getOrCreate } from '../../metrics.js';

/**
 * Where a carrier holds its writer (`{writer id}#{shard}`): the relay finds it through its
 * table's DynamoDB stream, so it is in no index and its write bills no index unit.
 */
export const STREAM_WRITER_ATTR = 'obxs';

/** A commit the stream showed: its writer, its `obxt` and the key of its carrier item. */
export interface StreamCarrier {
  writer: string;
  at: string;
  key: Record<string, unknown>;
}

interface Held extends StreamCarrier {
  shard: string;
  seq: string;
}

interface ShardState {
  /** Where the next read starts (an iterator is valid for 15 minutes; one that expired is fetched again from `readTo`). */
  iterator?: string | undefined;
  /** The last record read. */
  readTo?: string | undefined;
  /** Where a new iterator starts: the checkpoint's place, then after the last record read (TRIM_HORIZON when neither). */
  from?: { type: 'AT_SEQUENCE_NUMBER' | 'AFTER_SEQUENCE_NUMBER'; seq: string } | undefined;
  /** The shard is closed and every record of it was read. */
  ended: boolean;
  /** The checkpoint last saved, to save only a change. */
  saved?: string | undefined;
}

export interface CarrierStreamDeps {
  client: DynamoDBClient;
  streams: DynamoDBStreamsClient;
  doc: DynamoDBDocumentClient;
  /** The carrier table (full name). */
  table: string;
  /** Its key attribute names. */
  keys: readonly string[];
  /** Where checkpoints are kept (the outbox table, keyed by `id`). */
  checkpointTable: string;
  log: Logger;
  registry: Registry;
}

/** The id prefix of a checkpoint item in the outbox table. */
export const CHECKPOINT_PREFIX = 'stream#';
/** Checkpoints outlive the stream's 24 hours of records, then expire by TTL. */
const CHECKPOINT_RETENTION_S = 3 * 86_400;
/** GetRecords calls one shard gets in one `poll` at most; a shard further behind is read on in the next. */
const PAGES_PER_POLL = 50;
/**
 * The stream is read at most this often, unless the relay is about to take a writer over:
 * DynamoDB Streams allows 5 reads a second a shard, shared by every process that runs a relay.
 */
export const POLL_EVERY_MS = 5_000;
/** The shard list is read again at most this often (DescribeStream allows 10 a second an account). */
const LIST_EVERY_MS = 60_000;
const THROTTLED = new Set([
  'LimitExceededException',
  'ProvisionedThroughputExceededException',
  'ThrottlingException',
  'RequestLimitExceeded',
]);
/** Checkpoints are saved at most this often (they only say where a restarted relay starts reading). */
const SAVE_EVERY_MS = 5_000;

const isName = (err: unknown, name: string) =>
  (err as { name?: string } | undefined)?.name === name;

/**
 * Reads a carrier table's DynamoDB stream (NEW_IMAGE) and holds the commits it shows whose
 * writer has not been seen to publish them: how the relay finds the carriers of a writer that
 * stopped (shared/storage/outbox/outbox.ts, `relayPass`).
 *
 * - `poll` reads every shard of the stream to its current end (or `PAGES_PER_POLL` pages) and
 *   holds each record whose new image has `obxs` and `obxt`.
 * - The relay then `settle`s each writer: a commit created before the writer's watermark (or at
 *   or before where the relay itself got to with it, `after`) was published and is let go; so is
 *   every commit of a writer whose progress item is gone (it closed with nothing left, or a relay
 *   took it over).
 * - What is still held for a writer that stopped is what the relay publishes (`heldFor`).
 * - A shard's checkpoint (an item `stream#{table}#{shard}` in the outbox table) names the first
 *   record still held, or the last one read: a relay that restarts reads on from there, so a
 *   commit is let go only once published, by its writer or by a relay.
 *
 * A stream keeps 24 hours of records: a relay stopped for longer than that reads from the oldest
 * record left, says so in its log, and counts it (`svc_outbox_stream_gaps_total`).
 */
export class CarrierStream {
  private arn: string | undefined;
  private readonly shards = new Map<string, ShardState>();
  /** Held commits by writer, then by `obxt`. */
  private readonly held = new Map<string, Map<string, Held>>();
  private lastSave = 0;
  private lastRead = 0;
  private caughtUp = false;
  private shardIds: string[] | undefined;
  private listedAt = 0;
  private readonly m;

  constructor(private readonly d: CarrierStreamDeps) {
    const r = d.registry;
    this.m = {
      reads: getOrCreate(
        r,
        'svc_outbox_stream_reads_total',
        () =>
          new Counter({
            name: 'svc_outbox_stream_reads_total',
            help: 'Reads of every shard of a carrier table’s DynamoDB stream by the relay, by table',
            labelNames: ['table'],
            registers: [r],
          }),
      ),
      records: getOrCreate(
        r,
        'svc_outbox_stream_records_total',
        () =>
          new Counter({
            name: 'svc_outbox_stream_records_total',
            help: 'Records the relay read from a carrier table’s DynamoDB stream, by table',
            labelNames: ['table'],
            registers: [r],
          }),
      ),
      held: getOrCreate(
        r,
        'svc_outbox_stream_held',
        () =>
          new Gauge({
            name: 'svc_outbox_stream_held',
            help: 'Commits the relay read from a carrier table’s stream and has not yet seen published, by table',
            labelNames: ['table'],
            registers: [r],
          }),
      ),
      behind: getOrCreate(
        r,
        'svc_outbox_stream_behind',
        () =>
          new Gauge({
            name: 'svc_outbox_stream_behind',
            help: '1 while the relay’s last read of a carrier table’s stream stopped short of its end, by table',
            labelNames: ['table'],
            registers: [r],
          }),
      ),
      gaps: getOrCreate(
        r,
        'svc_outbox_stream_gaps_total',
        () =>
          new Counter({
            name: 'svc_outbox_stream_gaps_total',
            help: 'Shards whose checkpoint was older than the stream’s oldest record (the relay was stopped for more than the stream’s 24 hours), by table',
            labelNames: ['table'],
            registers: [r],
          }),
      ),
    };
  }

  private get label() {
    return { table: this.d.table };
  }

  private checkpointId(shard: string) {
    return `${CHECKPOINT_PREFIX}${this.d.table}#${shard}`;
  }

  /**
   * Reads every shard to its end, unless the last read started less than `POLL_EVERY_MS` ago and
   * `force` is not set. `caughtUp`: the last read reached the end of every shard (then every
   * commit that landed before it began is held or was let go); `read`: this call read.
   * Throttling (DynamoDB Streams allows 5 reads a second a shard, shared by every relay) makes
   * a read that is not caught up, not an error.
   */
  async poll(force = false): Promise<{ read: boolean; caughtUp: boolean }> {
    const now = Date.now();
    if (!force && now - this.lastRead < POLL_EVERY_MS)
      return { read: false, caughtUp: this.caughtUp };
    this.lastRead = now;
    this.m.reads.inc(this.label);
    try {
      this.caughtUp = await this.readAll();
    } catch (err) {
      if (!THROTTLED.has((err as { name?: string }).name ?? '')) throw err;
      this.d.log.warn({ err, table: this.d.table }, 'reading the table stream was throttled');
      this.caughtUp = false;
    }
    this.m.behind.set(this.label, this.caughtUp ? 0 : 1);
    this.gauge();
    return { read: true, caughtUp: this.caughtUp };
  }

  private async readAll(): Promise<boolean> {
    const arn = await this.streamArn();
    const shardIds = await this.listShards(arn);
    let caughtUp = true;
    for (const id of shardIds) {
      let s = this.shards.get(id);
      if (!s) {
        s = await this.loadShard(id);
        this.shards.set(id, s);
      }
      if (s.ended) continue;
      if (!(await this.readShard(arn, id, s))) caughtUp = false;
      // A shard that ended may have children the cached list does not name yet.
      if (s.ended) this.listedAt = 0;
    }
    // Shards the stream no longer lists are past its retention: nothing of them can be read.
    for (const id of [...this.shards.keys()]) if (!shardIds.includes(id)) this.shards.delete(id);
    return caughtUp;
  }

  /**
   * The table's stream. A table without one fails the read (and so the relay pass): its
   * carriers could not be found (the process's start checks it, `Relay.assertStreams`).
   */
  private async streamArn(): Promise<string> {
    if (this.arn) return this.arn;
    const t = await this.d.client.send(new DescribeTableCommand({ TableName: this.d.table }));
    const arn = t.Table?.LatestStreamArn;
    if (!arn || t.Table?.StreamSpecification?.StreamEnabled !== true)
      throw new Error(`table ${this.d.table} has no stream: its carriers cannot be found`);
    return (this.arn = arn);
  }

  /** The stream's shards, listed again every `LIST_EVERY_MS` or after one ended. */
  private async listShards(arn: string): Promise<string[]> {
    if (this.shardIds && Date.now() - this.listedAt < LIST_EVERY_MS) return this.shardIds;
    const out: string[] = [];
    let start: string | undefined;
    do {
      const r = await this.d.streams.send(
        new DescribeStreamCommand({ StreamArn: arn, ExclusiveStartShardId: start }),
      );
      for (const s of r.StreamDescription?.Shards ?? []) if (s.ShardId) out.push(s.ShardId);
      start = r.StreamDescription?.LastEvaluatedShardId;
    } while (start);
    this.listedAt = Date.now();
    return (this.shardIds = out);
  }

  private async loadShard(id: string): Promise<ShardState> {
    const c = (
      await this.d.doc.send(
        new GetCommand({
          TableName: this.d.checkpointTable,
          Key: { id: this.checkpointId(id) },
          ConsistentRead: true,
        }),
      )
    ).Item;
    if (c?.ended === true) return { ended: true, saved: 'ended' };
    if (typeof c?.at === 'string')
      return { ended: false, from: { type: 'AT_SEQUENCE_NUMBER', seq: c.at }, saved: `at:${c.at}` };
    if (typeof c?.after === 'string')
      return {
        ended: false,
        from: { type: 'AFTER_SEQUENCE_NUMBER', seq: c.after },
        saved: `after:${c.after}`,
      };
    return { ended: false };
  }

  private async iteratorFor(arn: string, id: string, s: ShardState): Promise<string | undefined> {
    const input: GetShardIteratorCommandInput = s.from
      ? { StreamArn: arn, ShardId: id, ShardIteratorType: s.from.type, SequenceNumber: s.from.seq }
      : { StreamArn: arn, ShardId: id, ShardIteratorType: 'TRIM_HORIZON' };
    try {
      return (await this.d.streams.send(new GetShardIteratorCommand(input))).ShardIterator;
    } catch (err) {
      // Trimmed (older than the stream's 24 hours), or not a place in this shard at all (a
      // checkpoint DynamoDB Local refuses as invalid): on from the oldest record left.
      const lost =
        isName(err, 'TrimmedDataAccessException') ||
        (s.from !== undefined && isName(err, 'ValidationException'));
      if (!lost) throw err;
      this.gap(id, input.SequenceNumber);
      s.from = undefined;
      return (
        await this.d.streams.send(
          new GetShardIteratorCommand({
            StreamArn: arn,
            ShardId: id,
            ShardIteratorType: 'TRIM_HORIZON',
          }),
        )
      ).ShardIterator;
    }
  }

  private gap(shard: string, from: string | undefined): void {
    this.m.gaps.inc(this.label);
    this.d.log.error(
      { table: this.d.table, shard, from },
      'the relay’s place in the stream is older than its oldest record: it reads on from the oldest one, and commits of writers that stopped before then cannot be found',
    );
  }

  /** Reads one shard on; true when it reached the shard's current end. */
  private async readShard(arn: string, id: string, s: ShardState): Promise<boolean> {
    for (let page = 0; page < PAGES_PER_POLL; page++) {
      s.iterator ??= await this.iteratorFor(arn, id, s);
      if (s.iterator === undefined) {
        s.ended = true;
        return true;
      }
      let r;
      try {
        r = await this.d.streams.send(
          new GetRecordsCommand({ ShardIterator: s.iterator, Limit: 1000 }),
        );
      } catch (err) {
        // An iterator that expired, or one DynamoDB Local says points at trimmed data (seen on
        // a shard's first iterator, seconds old): a new one from the same place. Whether that
        // place itself is gone, `iteratorFor` finds out.
        if (!isName(err, 'ExpiredIteratorException') && !isName(err, 'TrimmedDataAccessException'))
          throw err;
        s.iterator = undefined;
        continue;
      }
      const records = r.Records ?? [];
      for (const rec of records) this.take(id, rec);
      this.m.records.inc(this.label, records.length);
      const last = records[records.length - 1]?.dynamodb?.SequenceNumber;
      if (last !== undefined) {
        s.readTo = last;
        s.from = { type: 'AFTER_SEQUENCE_NUMBER', seq: last };
      }
      s.iterator = r.NextShardIterator;
      if (s.iterator === undefined) {
        s.ended = true;
        return true;
      }
      if (records.length === 0) return true;
    }
    return false;
  }

  private take(shard: string, rec: _Record): void {
    const image = rec.dynamodb?.NewImage;
    const seq = rec.dynamodb?.SequenceNumber;
    if (!image || !seq || rec.eventName === 'REMOVE') return;
    const w = image[STREAM_WRITER_ATTR]?.S;
    const at = image.obxt?.S;
    if (w === undefined || at === undefined) return;
    const writer = w.slice(0, w.lastIndexOf('#'));
    const item = unmarshall(image);
    const key = Object.fromEntries(this.d.keys.map((k) => [k, item[k]]));
    let m = this.held.get(writer);
    if (!m) {
      m = new Map<string, Held>();
      this.held.set(writer, m);
    }
    if (!m.has(at)) m.set(at, { writer, at, key, shard, seq });
  }

  /** The writers some held commit belongs to. */
  writers(): string[] {
    return [...this.held.keys()];
  }

  /**
   * Lets go of a writer's commits that are published: those whose `obxt` is below `below` (the
   * key of the writer's watermark), and those at or before `after` (where a relay got to with
   * it). `gone`: its progress item no longer
   * exists, so all of them.
   */
  settle(writer: string, p: { below?: string; after?: string; gone?: boolean }): void {
    const m = this.held.get(writer);
    if (!m) return;
    if (p.gone) {
      this.held.delete(writer);
      this.gauge();
      return;
    }
    for (const at of [...m.keys()])
      if ((p.below !== undefined && at < p.below) || (p.after !== undefined && at <= p.after))
        m.delete(at);
    if (m.size === 0) this.held.delete(writer);
    this.gauge();
  }

  /** A writer's held commits after `after` (all when undefined), in creation order. */
  heldFor(writer: string, after?: string): StreamCarrier[] {
    const m = this.held.get(writer);
    if (!m) return [];
    return [...m.values()]
      .filter((h) => after === undefined || h.at > after)
      .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0))
      .map(({ writer: w, at, key }) => ({ writer: w, at, key }));
  }

  private gauge(): void {
    let n = 0;
    for (const m of this.held.values()) n += m.size;
    this.m.held.set(this.label, n);
  }

  /**
   * Saves each shard's checkpoint that moved (at most every 5 s unless `force`): the first record
   * still held, else the last one read, else (a closed shard read to its end) that it ended.
   */
  async saveCheckpoints(force = false): Promise<void> {
    const now = Date.now();
    if (!force && now - this.lastSave < SAVE_EVERY_MS) return;
    this.lastSave = now;
    const firstHeld = new Map<string, string>();
    for (const m of this.held.values())
      for (const h of m.values()) {
        const cur = firstHeld.get(h.shard);
        if (cur === undefined || BigInt(h.seq) < BigInt(cur)) firstHeld.set(h.shard, h.seq);
      }
    for (const [id, s] of this.shards) {
      const held = firstHeld.get(id);
      const at: Record<string, unknown> =
        held !== undefined
          ? { at: held }
          : s.ended
            ? { ended: true }
            : s.readTo !== undefined
              ? { after: s.readTo }
              : s.from
                ? { [s.from.type === 'AT_SEQUENCE_NUMBER' ? 'at' : 'after']: s.from.seq }
                : {};
      const tag =
        'at' in at
          ? `at:${String(at.at)}`
          : 'after' in at
            ? `after:${String(at.after)}`
            : 'ended' in at
              ? 'ended'
              : '';
      if (tag === '' || tag === s.saved) continue;
      await this.d.doc.send(
        new PutCommand({
          TableName: this.d.checkpointTable,
          Item: {
            id: this.checkpointId(id),
            ...at,
            savedAt: now,
            expiresAt: Math.floor(now / 1000) + CHECKPOINT_RETENTION_S,
          },
        }),
      );
      s.saved = tag;
    }
  }
}
