import { dueEntry, type DueEntry } from '../../shared/storage/timers/due.js';
import { BucketWalker } from '../../shared/timers/walker.js';
import type { Runtime } from '../../shared/runtime.js';
import type { DispatchState } from '../../shared/storage/ledger/dispatches.js';
import type { AttemptJob } from './attempt.js';
import { HOLD_RECHECK_MS } from './ordering.js';
import type { Lane } from './lanes.js';
import type { ShardLeases } from './shard-leases.js';

/** The shard of an entry: the last part of its bucket key (`retry#{minute}#{shard}`). */
const shardOfEntry = (e: Pick<DueEntry, 'pk'>) => Number(e.pk.slice(e.pk.lastIndexOf('#') + 1));

/**
 * A dispatch never attempted (its first attempt was left to the due-index: the endpoint's
 * backlog was full, or an attempt's record failed) goes to the first-attempt lane, like an
 * event from Kafka; only real retries and operator resends share the narrow retry lane, so a
 * healthy endpoint's deferred first attempts are not throttled like a failing one's retries.
 */
export function laneOf(trigger: AttemptJob['trigger']): Lane {
  return trigger === 'first' ? 'first' : 'retry';
}

/** Entries claimed at once (each claim is a read and an update). */
const CLAIM_CONCURRENCY = 16;

/**
 * Reads the due-index (the ledger's `due` index of dispatch items, shared/storage/ledger/dispatch-due.ts)
 * and turns due entries into attempt jobs.
 * - With shard leases (the dispatcher's way, shard-leases.ts): the retries and resends of the
 *   shards this copy holds are queued as they are, unclaimed (those of other copies' shards
 *   are left to them): no other copy makes them while the lease lasts, the attempt must end
 *   before it does (`deadlineMs`), and a job is not queued twice while it runs here. The
 *   attempt's record, which moves the entry on, is its only write. A copy that dies
 *   mid-attempt loses nothing: the entry is still due, and the next holder of the shard makes
 *   the attempt again.
 * - Deferred first attempts, found by any copy (and every entry, without leases), are claimed
 *   with one conditional update of the dispatch item that moves the entry on to a safety-net
 *   time (exactly one worker copy wins), so the sweep does not read them again while they run;
 *   if the worker dies mid-attempt the safety net fires and the attempt is redone.
 *
 * An entry whose endpoint is busy in its lane is moved on instead (`snooze`). Retries due
 * within two sweep intervals also get a local timer, so short (sandbox) delays are kept
 * precisely rather than rounded up to the next sweep.
 */
export class Sweeper {
  private readonly walker: BucketWalker;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly firing = new Map<string, Promise<void>>();
  /** Dispatches whose unclaimed attempt is queued or running here (a lease's shards). */
  private readonly active = new Set<string>();
  private loop: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly rt: Runtime,
    private readonly o: {
      /**
       * Queues a claimed job in its lane (`laneOf`); false when it cannot be taken now (the
       * safety net redoes it).
       */
      enqueue: (job: AttemptJob, lane: Lane) => boolean;
      /** How many more jobs may be claimed now. */
      room: () => number;
      /** Whether this endpoint can take another job in `lane` now (else its entry is snoozed). */
      accepts: (appId: string, lane: Lane) => boolean;
      /**
       * This copy's leases of the due-index shards (shard-leases.ts). When given, only the
       * shards held are swept, and their entries are attempted without a claim. Without it,
       * every shard is swept and each entry claimed.
       */
      leases?: Pick<ShardLeases, 'validUntil'>;
      /** Called for each entry snoozed (its endpoint was busy in its lane). */
      onSnooze?: () => void;
      /**
       * Whether the dispatch may be attempted now by its app's ordering (ordering.ts); when not,
       * it is held, and its entry moves on to the recheck.
       */
      mayGo?: (state: DispatchState) => Promise<boolean>;
    },
  ) {
    this.walker = new BucketWalker(rt, {
      family: 'retry',
      shards: rt.config.TIMER_SHARDS,
    });
  }

  async start(): Promise<void> {
    await this.walker.init(Date.now());
    const tick = () => {
      this.running = this.sweep()
        .catch((err: unknown) => this.rt.log.warn({ err }, 'retry sweep failed'))
        .finally(() => {
          if (!this.stopped)
            this.loop = setTimeout(tick, this.rt.config.DISPATCH_SWEEP_INTERVAL_MS);
        });
    };
    tick();
  }

  /**
   * One pass of the shared bucket walk (shared/timers/walker.ts): each bucket's due entries,
   * as many as there is room for, are claimed; the pass ends when the room is used up.
   */
  async sweep(nowMs = Date.now()): Promise<void> {
    await this.walker.walk(nowMs, async (b, shard) => {
      const room = this.o.room();
      if (room <= 0 || this.stopped) return 'stop';
      const entries = await this.rt.ledger.listDispatchDue(
        b,
        shard,
        nowMs,
        room + this.active.size,
      );
      const todo = entries.filter((e) => !this.active.has(e.dispatchId));
      for (let i = 0; i < todo.length; i += CLAIM_CONCURRENCY)
        await Promise.all(todo.slice(i, i + CLAIM_CONCURRENCY).map((e) => this.fire(e)));
      return entries.length > 0;
    });
  }

  /** A recorded retry: also armed locally when due before the sweep would see it. */
  schedule(e: DueEntry): void {
    const wait = Date.parse(e.dueAt) - Date.now();
    if (this.stopped || wait > 2 * this.rt.config.DISPATCH_SWEEP_INTERVAL_MS) return;
    const t = setTimeout(
      () => {
        this.timers.delete(t);
        if (this.o.room() > 0)
          void this.fire(e).catch((err: unknown) =>
            this.rt.log.warn({ err }, 'local retry failed; the sweep will retry'),
          );
      },
      Math.max(0, wait),
    );
    this.timers.add(t);
  }

  /** Claims one due entry and queues its attempt. */
  fire(e: DueEntry): Promise<void> {
    if (this.stopped || this.active.has(e.dispatchId)) return Promise.resolve();
    const running = this.firing.get(e.sk);
    if (running) return running;
    const p = this.claim(e).finally(() => this.firing.delete(e.sk));
    this.firing.set(e.sk, p);
    return p;
  }

  private async claim(e: DueEntry): Promise<void> {
    const { rt } = this;
    const state = await rt.ledger.getDispatchState(e.dispatchId);
    // Not the dispatch's current entry: the index had not caught up with a move yet.
    if (!state || state.dueSk !== e.sk) return;
    if (state.deliveryStatus !== 'pending' && e.kind !== 'manual') {
      await this.retire(e);
      return;
    }
    const trigger = e.kind === 'manual' ? 'manual' : state.attempts === 0 ? 'first' : 'retry';
    const lane = laneOf(trigger);
    // A retry or a resend goes by the shard's lease; a deferred first attempt is claimed by
    // whichever copy finds it (such entries come by the thousand after an outage: every copy
    // shares them, and one claimed is not read again by the sweeps while it waits its turn).
    const leased = this.o.leases !== undefined && trigger !== 'first';
    const leaseEndMs = leased ? this.o.leases!.validUntil(shardOfEntry(e)) : 0;
    if (leased && leaseEndMs === 0) return; // another copy's shard: its holder makes it
    if (e.kind !== 'manual' && this.o.mayGo && !(await this.o.mayGo(state))) {
      await this.moveOn(e, Date.now() + HOLD_RECHECK_MS);
      return;
    }
    if (!this.o.accepts(e.appId, lane)) return this.snooze(e, state.dueSnoozes ?? 0);
    if (leased) {
      // This copy's shard: no other copy makes its retries while the lease lasts, so the
      // attempt is made without a claim, and its record is the only write.
      if (this.active.has(e.dispatchId)) return;
      this.active.add(e.dispatchId);
      const done = () => this.active.delete(e.dispatchId);
      if (!this.o.enqueue({ state, trigger, deadlineMs: leaseEndMs, done }, lane)) done();
      return;
    }
    const nowMs = Date.now();
    const safetyMs = rt.config.DISPATCH_SAFETY_NET_MS;
    // Only if no attempt was recorded since the state was read.
    const safety = await this.moveOn(e, nowMs + safetyMs, state.attempts);
    if (!safety) return; // another copy claimed it, or the dispatch moved on
    this.o.enqueue(
      {
        state: { ...state, duePk: safety.pk, dueSk: safety.sk, dueKind: safety.kind },
        trigger,
        deadlineMs: nowMs + safetyMs,
      },
      lane,
    );
  }

  /**
   * An endpoint already busy in that lane: move the entry on instead of queueing it, so one
   * saturated endpoint neither fills the room nor blocks the sweep. The wait doubles with each
   * snooze of the entry since its last attempt (`dueSnoozes`, counted on the dispatch item):
   * a sweep interval, two, four… (±20 % jitter), never more than the safety net. So a backlog that
   * clears in seconds (a burst after a restart) is not held back a whole safety interval, and
   * an endpoint that stays saturated costs each of its entries a write a safety interval.
   */
  private async snooze(e: DueEntry, snoozes: number): Promise<void> {
    const c = this.rt.config;
    const jittered = c.DISPATCH_SWEEP_INTERVAL_MS * 2 ** snoozes * (0.8 + 0.4 * Math.random());
    const wait = Math.min(c.DISPATCH_SAFETY_NET_MS, jittered);
    if (await this.moveOn(e, Date.now() + wait, undefined, true)) this.o.onSnooze?.();
  }

  /**
   * Moves the dispatch's due entry `e` to `dueAtMs`: one update of the dispatch item,
   * conditional on `e` still being its entry (and, when given, on its attempt count). Returns
   * the new entry, or undefined when the condition did not hold.
   */
  private async moveOn(
    e: DueEntry,
    dueAtMs: number,
    attempts?: number,
    snoozed = false,
  ): Promise<DueEntry | undefined> {
    const { rt } = this;
    const next = dueEntry(e.dispatchId, e.appId, dueAtMs, e.kind, rt.config.TIMER_SHARDS);
    return (await rt.ledger.moveDispatchDue(e, next, attempts, snoozed)) ? next : undefined;
  }

  /** An automatic entry of a dispatch that is already settled: remove it. */
  private async retire(e: DueEntry): Promise<void> {
    await this.rt.ledger.detachDispatchDue(e.dispatchId, e.sk);
  }

  /** Stops sweeping and clears local timers (their entries stay in the index). Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.loop) clearTimeout(this.loop);
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    await this.running;
    // Claims already sent finish (their jobs are refused by the closed lanes; the safety
    // entries they wrote redo them), so nothing touches DynamoDB after stop resolves.
    await Promise.allSettled([...this.firing.values()]);
  }
}
