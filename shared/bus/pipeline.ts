import type { Consumer, Kafka, KafkaMessage } from 'kafkajs';
import type { Registry } from 'prom-client';
import { coerceError, isPermanent } from '../errors.js';
import type { Logger } from '../logger.js';
import { backoffMs } from '../backoff.js';
import { Admission, type Ticket } from './admission.js';
import { consumerMetrics, deadLetter, headersOf, pause, type BusDeps } from './support.js';
import type { Producer } from './producer.js';
import { PartitionTracker } from './tracker.js';

export interface PipelineMessage {
  topic: string;
  partition: number;
  offset: string;
  key: string | undefined;
  headers: Record<string, string>;
  /** The decoded JSON value. */
  value: unknown;
  /**
   * A previous owner of the partition may already have handled it (it lies in the first
   * `maxUncommitted` offsets after an assignment): check before acting, write conditionally.
   */
  uncertain: boolean;
  /** The assignment generation it was fetched in. */
  generation: number;
  /** When its partition was (last) assigned to this consumer. */
  assignedAtMs: number;
  fetchedAtMs: number;
}

export interface PipelineContext {
  log: Logger;
  /**
   * True while the message's partition is certainly still this consumer's: no rebalance
   * since it was fetched, and fetched recently enough (under half the session timeout) that
   * the group cannot have handed the partition to another member without this one noticing.
   * Only then may its effects be written without conditions.
   */
  held(m: PipelineMessage): boolean;
}

/**
 * Accepts a chunk of messages (waiting as long as it needs room: back-pressure) and returns,
 * per message, a promise that settles when the message's work is durably done. A rejection
 * re-runs that message, with capped back-off for as long as it fails, unless its error is
 * permanent (`isPermanent`: the message can never be processed), which dead-letters it.
 */
export type PipelineHandler = (
  messages: PipelineMessage[],
  ctx: PipelineContext,
) => Promise<Promise<unknown>[]>;

export interface PipelineOptions {
  kafka: Kafka;
  groupId: string;
  topics: string[];
  handler: PipelineHandler;
  deadLetterTopic: string;
  producer: Producer;
  log: Logger;
  registry: Registry;
  /** Per partition, the most offsets handed out past the committed position. */
  maxUncommitted: number;
  commitIntervalMs?: number;
  /** First back-off after a failure, doubling up to `retryMaxMs`; retries never stop. */
  retryBaseMs?: number;
  retryMaxMs?: number;
  partitionsConsumedConcurrently?: number;
  sessionTimeoutMs?: number;
  /** The broker's longest hold of an idle fetch (kafkajs `maxWaitTimeInMs`; 500 ms unless set: it bounds only an idle consumer's polling). */
  fetchMaxWaitMs?: number;
  /** Messages passed to the handler at once. */
  chunkSize?: number;
  /**
   * One message at a time per partition, in order: the next is handed over only once the
   * previous one is done (or dead-lettered). For handlers whose effects must follow the
   * partition's order (`serialConsumer`).
   */
  serial?: boolean;
  /** Where a group without a committed position starts (default: the beginning). */
  fromBeginning?: boolean;
  /**
   * The most messages the handler works on at once while healthy (default `maxUncommitted`).
   * Transient failures lower it (see `Admission`), successes raise it back.
   */
  maxInFlight?: number;
}

/**
 * A consumer whose handler does not finish a message before taking the next: messages are
 * handed over as fast as the handler accepts them, their work completes in any order, and an
 * offset is committed only once every message before it is done. So a slow message holds
 * back only the commit position of its partition, never the delivery of the messages after it,
 * and nothing uncommitted is lost: after a crash or a rebalance the next owner gets it again,
 * flagged `uncertain`. In its serial mode (`serial`, see `serialConsumer`) it hands a
 * partition's messages over one at a time instead, in order.
 */
export class PipelinedConsumer {
  private consumer: Consumer | undefined;
  private generation = 0;
  /** When the current assignment began. */
  private assignedAtMs = Date.now();
  /** Per `topic:partition` of the current assignment. */
  private readonly trackers = new Map<
    string,
    { topic: string; partition: number; t: PartitionTracker }
  >();
  private commitTimer: NodeJS.Timeout | undefined;
  private committing: Promise<void> | undefined;
  private quiescing = false;
  private stopped?: Promise<void>;
  private readonly m;
  private readonly sessionTimeoutMs: number;
  private readonly admission: Admission;

  constructor(private readonly o: PipelineOptions) {
    this.m = consumerMetrics(o.registry);
    this.admission = new Admission({ max: o.maxInFlight ?? o.maxUncommitted });
    this.sessionTimeoutMs = o.sessionTimeoutMs ?? 30_000;
    this.ctx = {
      log: o.log,
      held: (m) =>
        m.generation === this.generation && Date.now() - m.fetchedAtMs < this.sessionTimeoutMs / 2,
    };
  }

  readonly ctx: PipelineContext;

  async start(): Promise<void> {
    await this.run();
    this.commitTimer = setInterval(() => void this.commit(), this.o.commitIntervalMs ?? 100);
    this.commitTimer.unref();
    this.o.log.info(
      { groupId: this.o.groupId, topics: this.o.topics, serial: this.o.serial ?? false },
      'consumer started',
    );
  }

  private async run(): Promise<void> {
    const { kafka, groupId, topics } = this.o;
    const consumer = kafka.consumer({
      groupId,
      sessionTimeout: this.sessionTimeoutMs,
      heartbeatInterval: 3_000,
      maxWaitTimeInMs: this.o.fetchMaxWaitMs ?? 500,
      allowAutoTopicCreation: false,
    });
    this.consumer = consumer;
    consumer.on(consumer.events.FETCH, () => this.m.fetches.inc({ group: groupId }));
    // A rebalance may move any partition: what was fetched before it is no longer held.
    consumer.on(consumer.events.REBALANCING, () => this.newGeneration());
    consumer.on(consumer.events.GROUP_JOIN, () => this.newGeneration());
    // kafkajs restarts a crashed consumer only after a retriable error; any other crash would
    // leave the group for good, so a new consumer takes its place.
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (!payload.restart && !this.quiescing) this.restartAfterCrash(consumer, payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: this.o.fromBeginning ?? true });
    await consumer.run({
      partitionsConsumedConcurrently: this.o.partitionsConsumedConcurrently ?? 3,
      eachBatchAutoResolve: false,
      autoCommit: false,
      // kafkajs passes closures, not methods: they need no `this`.
      // eslint-disable-next-line @typescript-eslint/unbound-method
      eachBatch: async ({ batch, resolveOffset, heartbeat, isRunning, isStale }) => {
        const msgs = batch.messages;
        if (msgs.length === 0) return;
        const gen = this.generation;
        const key = `${batch.topic}:${batch.partition}`;
        let t = this.trackers.get(key)?.t;
        if (!t) {
          t = new PartitionTracker(
            Number(msgs[0]!.offset),
            this.o.maxUncommitted,
            Number(batch.highWatermark),
          );
          this.trackers.set(key, { topic: batch.topic, partition: batch.partition, t });
        }
        let i = 0;
        const live = () => isRunning() && !isStale() && !this.quiescing && gen === this.generation;
        while (i < msgs.length && live()) {
          // A partition whose oldest work is stuck stops here, heartbeating, until it moves;
          // so does every partition while the handler's dependencies are overloaded.
          while (t.room() === 0 && live()) {
            await t.waitForRoom(1_000);
            await heartbeat();
          }
          while (this.admission.room() === 0 && live()) {
            await this.admission.waitForRoom(1_000);
            await heartbeat();
          }
          if (!live()) break;
          const size = this.o.serial ? 1 : (this.o.chunkSize ?? 100);
          const n = Math.min(t.room(), this.admission.room(), size);
          if (n === 0) continue;
          const chunk = msgs.slice(i, i + n);
          const outcomes = await this.hand(batch.topic, batch.partition, t, gen, chunk);
          if (this.o.serial) await whileBeating(Promise.allSettled(outcomes), heartbeat);
          i += chunk.length;
          resolveOffset(chunk[chunk.length - 1]!.offset);
          await heartbeat();
        }
        this.m.lag.set(
          { group: groupId, topic: batch.topic, partition: String(batch.partition) },
          Number(batch.offsetLagLow()),
        );
      },
    });
  }

  private restartAfterCrash(crashed: Consumer, error: unknown): void {
    this.o.log.error({ err: error }, 'pipelined consumer crashed; starting a new one');
    this.newGeneration();
    void (async () => {
      for (let attempt = 0; !this.quiescing; attempt++) {
        await crashed.disconnect().catch(() => undefined);
        await new Promise((r) =>
          setTimeout(r, backoffMs(attempt, { baseMs: 500, maxMs: 10_000, jitter: 0.2 })),
        );
        if (this.quiescing) return;
        try {
          await this.run();
          return;
        } catch (err) {
          this.o.log.warn({ err, attempt }, 'consumer restart failed; trying again');
        }
      }
    })();
  }

  private newGeneration(): void {
    this.generation++;
    this.assignedAtMs = Date.now();
    // Positions of the old assignment are committed no more: the group may have moved them.
    this.trackers.clear();
  }

  private async hand(
    topic: string,
    partition: number,
    t: PartitionTracker,
    gen: number,
    chunk: KafkaMessage[],
  ): Promise<Promise<void>[]> {
    const now = Date.now();
    const outcomes: Promise<void>[] = [];
    const good: {
      pm: PipelineMessage;
      raw: KafkaMessage;
      entry: { offset: number; done: boolean };
    }[] = [];
    for (const raw of chunk) {
      const entry = t.add(Number(raw.offset));
      let value: unknown;
      try {
        value = JSON.parse(raw.value?.toString() ?? 'null');
      } catch (err) {
        outcomes.push(
          this.track(
            t,
            entry,
            this.dead(topic, partition, raw, 'SVC_BAD_JSON', (err as Error).message),
          ),
        );
        continue;
      }
      const pm: PipelineMessage = {
        topic,
        partition,
        offset: raw.offset,
        key: raw.key?.toString(),
        headers: headersOf(raw),
        value,
        uncertain: t.uncertain(Number(raw.offset)),
        generation: gen,
        assignedAtMs: this.assignedAtMs,
        fetchedAtMs: now,
      };
      // Tracked below, once the handler accepted the chunk.
      good.push({ pm, raw, entry });
    }
    if (good.length === 0) return outcomes;
    const ticket = this.admission.take(good.length);
    this.m.admission.set({ group: this.o.groupId }, this.admission.limit);
    const done = await this.accept(good.map((g) => g.pm));
    good.forEach((g, j) =>
      outcomes.push(this.track(t, g.entry, this.settle(g.pm, g.raw, done[j]!, 0, ticket))),
    );
    return outcomes;
  }

  /** Runs the handler; a handler that throws while accepting fails every message of the chunk. */
  private async accept(pms: PipelineMessage[]): Promise<Promise<unknown>[]> {
    try {
      const out = await this.o.handler(pms, this.ctx);
      if (out.length !== pms.length)
        throw new Error('pipeline handler answered for other messages');
      return out;
    } catch (err) {
      // The handler's own failure, passed on unchanged for the runner to classify.
      // eslint-disable-next-line @typescript-eslint/prefer-promise-reject-errors
      return pms.map(() => Promise.reject(err));
    }
  }

  /**
   * The message's outcome: done, or dead-lettered when it can never be processed. Any other
   * failure is retried with capped back-off for as long as it lasts (its offset, and so the
   * partition's commit position, waits meanwhile). Rejects only when the message is left to
   * the partition's next owner: this consumer is stopping, or lost the assignment it came in.
   */
  private async settle(
    pm: PipelineMessage,
    raw: KafkaMessage,
    work: Promise<unknown>,
    attempt: number,
    ticket: Ticket,
  ): Promise<void> {
    const { groupId } = this.o;
    try {
      await work;
      this.admit('ok', ticket);
      this.m.handled.inc({ group: groupId, topic: pm.topic, outcome: 'ok' });
      return;
    } catch (e) {
      const err = coerceError(e);
      const log = this.o.log.child({ topic: pm.topic, partition: pm.partition, offset: pm.offset });
      const live = () => !this.quiescing && pm.generation === this.generation;
      if (!live()) {
        this.admit('neutral', ticket);
        throw e;
      }
      if (isPermanent(e)) {
        this.admit('neutral', ticket);
        log.error({ err: e, code: err.code }, 'message can never be processed; dead-lettering');
        return this.dead(
          pm.topic,
          pm.partition,
          raw,
          err.code,
          (e as Error)?.message ?? String(e),
          live,
        );
      }
      this.admit('failed', ticket);
      this.m.handled.inc({ group: groupId, topic: pm.topic, outcome: 'retried' });
      const wait = backoffMs(attempt, {
        baseMs: this.o.retryBaseMs ?? 200,
        maxMs: this.o.retryMaxMs ?? 10_000,
        jitter: 0.2,
      });
      const level = attempt >= 3 ? 'error' : 'warn';
      log[level]({ err: e, code: err.code, attempt, wait }, 'message failed; retrying');
      // A retry waits its turn like new work: while everything fails, one at a time.
      if (!(await pause(wait, live))) throw e;
      const next = await this.admission.acquire(live);
      if (next === undefined) throw e;
      // Whatever the failed try left behind is checked for first.
      const [again] = await this.accept([{ ...pm, uncertain: true }]);
      return this.settle(pm, raw, again!, attempt + 1, next);
    }
  }

  private admit(outcome: 'ok' | 'failed' | 'neutral', ticket: Ticket): void {
    this.admission.release(outcome, ticket);
    this.m.admission.set({ group: this.o.groupId }, this.admission.limit);
  }

  /** Dead-letters a message, retrying the send while Kafka cannot take it. */
  private async dead(
    topic: string,
    partition: number,
    message: KafkaMessage,
    code: string,
    reason: string,
    live: () => boolean = () => !this.quiescing,
  ): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await deadLetter(this.o, { topic, partition, message, code, reason });
        this.m.handled.inc({ group: this.o.groupId, topic, outcome: 'dead_lettered' });
        this.m.deadLettered.inc({ group: this.o.groupId, topic, code });
        return;
      } catch (err) {
        this.o.log.warn({ err, attempt }, 'dead-letter send failed; retrying');
        if (!(await pause(backoffMs(attempt, { baseMs: 200, maxMs: 10_000, jitter: 0.2 }), live)))
          throw new Error('dead-letter send abandoned: partition left to its next owner', {
            cause: err,
          });
      }
    }
  }

  private track(
    t: PartitionTracker,
    entry: { offset: number; done: boolean },
    outcome: Promise<void>,
  ): Promise<void> {
    outcome.then(
      () => {
        if (t.done(entry) && t.position - t.committed >= 500) void this.commit();
      },
      (err: unknown) => {
        // Left uncommitted on purpose: the partition's next owner (maybe this consumer, after
        // the rebalance) fetches it again.
        this.o.log.debug({ err }, 'message left to the next owner of its partition');
      },
    );
    return outcome;
  }

  /** Commits every partition's done prefix (one request; one at a time). */
  commit(): Promise<void> {
    if (this.committing) return this.committing;
    const consumer = this.consumer;
    const offsets = [...this.trackers.values()]
      .filter(({ t }) => t.position > t.committed)
      .map(({ topic, partition, t }) => ({
        topic,
        partition,
        offset: String(t.position),
        t,
        position: t.position,
      }));
    if (!consumer || offsets.length === 0) return Promise.resolve();
    const gen = this.generation;
    this.committing = consumer
      .commitOffsets(offsets.map(({ topic, partition, offset }) => ({ topic, partition, offset })))
      .then(
        () => {
          if (gen === this.generation) for (const x of offsets) x.t.committedTo(x.position);
        },
        (err: unknown) => this.o.log.warn({ err }, 'offset commit failed; retried with the next'),
      )
      .finally(() => (this.committing = undefined));
    return this.committing;
  }

  /** Stops taking messages (work already handed over goes on) and stops fetching. */
  quiesce(): void {
    if (this.quiescing) return;
    this.quiescing = true;
    try {
      this.consumer?.pause(this.o.topics.map((topic) => ({ topic })));
    } catch (err) {
      this.o.log.debug({ err }, 'pause on quiesce failed'); // not running yet: nothing to fetch
    }
  }

  /** Commits what is done, then leaves the group. Idempotent. */
  stop(): Promise<void> {
    this.quiesce();
    this.stopped ??= (async () => {
      if (this.commitTimer) clearInterval(this.commitTimer);
      await this.committing;
      await this.commit();
      await this.consumer
        ?.disconnect()
        .catch((err: unknown) => this.o.log.warn({ err }, 'consumer disconnect failed'));
    })();
    return this.stopped;
  }
}

/** A pipelined consumer wired to a process's runtime (group `${TOPIC_PREFIX}${name}`). */
export function runtimePipeline(
  rt: BusDeps,
  o: Pick<
    PipelineOptions,
    'topics' | 'handler' | 'log' | 'maxUncommitted' | 'partitionsConsumedConcurrently'
  > & { name: string },
): PipelinedConsumer {
  const { name, ...rest } = o;
  return new PipelinedConsumer({
    ...rest,
    kafka: rt.kafka,
    groupId: `${rt.config.TOPIC_PREFIX}${name}`,
    deadLetterTopic: rt.topics.deadLetter,
    producer: rt.producer,
    registry: rt.registry,
    sessionTimeoutMs: rt.config.CONSUMER_SESSION_TIMEOUT_MS,
  });
}

/**
 * Waits for `work`, heartbeating every 2 s meanwhile so the group keeps the partition here (a
 * failed heartbeat, during a rebalance, is left to the caller's `live()` to notice).
 */
async function whileBeating(work: Promise<unknown>, heartbeat: () => Promise<void>) {
  let done = false;
  void work.finally(() => (done = true));
  while (!done) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([work, new Promise((r) => (timer = setTimeout(r, 2_000)))]);
    clearTimeout(timer);
    if (!done) await heartbeat().catch(() => undefined);
  }
}
