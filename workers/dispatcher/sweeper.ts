import {
  detachDispatchDue,
  getDispatchState,
  moveDispatchDue,
} from '../../shared/ledger/dispatches.js';
import { legacyKind, listDispatchDue } from '../../shared/ledger/dispatch-due.js';
import { dueEntry, type DueEntry } from '../../shared/timers/due.js';
import { BucketWalker } from '../../shared/timers/walker.js';
import type { Runtime } from '../../shared/runtime.js';
import type { AttemptJob } from './attempt.js';
import type { Lane } from './lanes.js';

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
 * Reads the due-index (the ledger's `due` index of dispatch items, shared/ledger/dispatch-due.ts)
 * and turns due entries into retry jobs. An entry is claimed with one conditional update of
 * its dispatch item that moves the entry on to a safety-net time (exactly one worker copy
 * wins), so a worker that dies mid-attempt loses nothing: the safety net fires and the attempt
 * is redone. Retries due within two sweep intervals also get a local timer,
 * so short (sandbox) delays are kept precisely rather than rounded up to the next sweep.
 */
export class Sweeper {
  private readonly walker: BucketWalker;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly firing = new Map<string, Promise<void>>();
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
    },
  ) {
    this.walker = new BucketWalker(rt, {
      family: 'retry',
      shards: rt.config.DISPATCH_TIMER_SHARDS,
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
      const entries = await listDispatchDue(this.rt, b, shard, nowMs, room);
      for (let i = 0; i < entries.length; i += CLAIM_CONCURRENCY)
        await Promise.all(entries.slice(i, i + CLAIM_CONCURRENCY).map((e) => this.fire(e)));
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
    if (this.stopped) return Promise.resolve();
    const running = this.firing.get(e.sk);
    if (running) return running;
    const p = this.claim(e).finally(() => this.firing.delete(e.sk));
    this.firing.set(e.sk, p);
    return p;
  }

  private async claim(found: DueEntry & { legacy?: true }): Promise<void> {
    const { rt } = this;
    const state = await getDispatchState(rt, found.dispatchId);
    // Not the dispatch's current entry: the index had not caught up with a move yet.
    if (!state || state.dueSk !== found.sk) return;
    const e = found.legacy ? { ...found, kind: await legacyKind(rt, found) } : found;
    if (state.deliveryStatus !== 'pending' && e.kind !== 'manual') {
      await this.retire(e);
      return;
    }
    const trigger = e.kind === 'manual' ? 'manual' : state.attempts === 0 ? 'first' : 'retry';
    const lane = laneOf(trigger);
    if (!this.o.accepts(e.appId, lane)) return this.snooze(e);
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
   * An endpoint already busy in that lane: move the entry one safety interval on instead of
   * queueing it, so one saturated endpoint neither fills the room nor blocks the sweep.
   */
  private async snooze(e: DueEntry): Promise<void> {
    await this.moveOn(e, Date.now() + this.rt.config.DISPATCH_SAFETY_NET_MS);
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
  ): Promise<DueEntry | undefined> {
    const { rt } = this;
    const next = dueEntry(e.dispatchId, e.appId, dueAtMs, e.kind, rt.config.DISPATCH_TIMER_SHARDS);
    return (await moveDispatchDue(rt, e, next, attempts)) ? next : undefined;
  }

  /** An automatic entry of a dispatch that is already settled: remove it. */
  private async retire(e: DueEntry): Promise<void> {
    await detachDispatchDue(this.rt, e.dispatchId, e.sk);
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
