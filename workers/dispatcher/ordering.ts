import { AppError } from '../../shared/errors.js';
import type { Ledger } from '../../shared/ledger/port.js';
import type { DispatchState } from '../../shared/storage/ledger/dispatches.js';
import { dueEntry, type DueEntry } from '../../shared/storage/timers/due.js';
import {
  MAX_HELD,
  type PrincipalLane,
  type PrincipalLanes,
} from '../../shared/domain/webhook-ordering.js';
import type { DispatcherMetrics } from './metrics.js';

/**
 * How long a held dispatch waits before it looks at its lane again by itself. The head's
 * settlement makes the next one due at once (`release`); this only bounds the wait when that
 * step was lost (a copy killed between recording the head and moving the lane).
 */
export const HOLD_RECHECK_MS = 5 * 60_000;

/**
 * A lane's head not found in the ledger is taken for gone only after this long: a head is
 * claimed just before its first attempt's record is written.
 */
const MISSING_HEAD_GRACE_MS = 2 * 60_000;

/** Rounds of a lane change refused because another copy changed the lane first. */
const ROUNDS = 20;

export type Place = 'head' | 'held' | 'unordered';

export interface OrderDeps {
  lanes: PrincipalLanes;
  ledger: Pick<Ledger, 'getDispatchState' | 'moveDispatchDue'>;
  shards: number;
  metrics: Pick<DispatcherMetrics, 'ordering'>;
  /** Called with the entry of a held dispatch made due now (for a precise local timer). */
  onDue: (e: DueEntry) => void;
  now?: () => number;
}

/**
 * Per-principal order for apps with `webhookOrdering: 'principal'` (shared/domain/webhook-ordering.ts
 * keeps the lanes): a principal's dispatch goes only while none of that principal's earlier
 * ones is pending in its lane; otherwise it is written held (pending, due only at the recheck)
 * and queued behind it. A first attempt that fails claims the lane before its record lands,
 * so a later event never overtakes its retries; settling the head makes the next held one due.
 * Within one process a principal's events are also taken one at a time (`inTurn`): an event's
 * first attempt is recorded, and its lane claimed if it failed, before the next one is looked at.
 */
export class PrincipalOrder {
  private readonly turns = new Map<string, Promise<unknown>>();
  private readonly now: () => number;

  constructor(private readonly d: OrderDeps) {
    this.now = d.now ?? Date.now;
  }

  /** Runs `fn` once every earlier call for this principal has ended (in this process). */
  inTurn<T>(appId: string, referenceId: string, fn: () => Promise<T>): Promise<T> {
    const key = `${appId}\u0000${referenceId}`;
    const run = (this.turns.get(key) ?? Promise.resolve()).then(fn, fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.turns.set(key, tail);
    void tail.then(() => {
      if (this.turns.get(key) === tail) this.turns.delete(key);
    });
    return run;
  }

  /** The principal's lane with a pending head (settled heads are moved past), if any. */
  async current(appId: string, referenceId: string): Promise<PrincipalLane | undefined> {
    for (let round = 0; round < ROUNDS; round++) {
      const lane = await this.d.lanes.read(appId, referenceId);
      if (!lane || (await this.headPending(lane))) return lane;
      await this.advance(appId, referenceId, lane);
    }
    throw busy();
  }

  /**
   * Puts the dispatch in its principal's lane: at its head when there is no lane (or it heads
   * it already), else behind the others. `unordered` when the lane is full.
   */
  async place(s: Pick<DispatchState, 'appId' | 'referenceId' | 'dispatchId'>): Promise<Place> {
    const { appId, referenceId, dispatchId } = s;
    for (let round = 0; round < ROUNDS; round++) {
      const lane = await this.current(appId, referenceId);
      if (!lane) {
        if (await this.d.lanes.claim(appId, referenceId, dispatchId)) return 'head';
        continue;
      }
      if (lane.head === dispatchId) return 'head';
      if (lane.held.includes(dispatchId)) return 'held';
      if (lane.held.length >= MAX_HELD) {
        this.d.metrics.ordering.inc({ step: 'unordered' });
        return 'unordered';
      }
      if (await this.d.lanes.hold(appId, referenceId, lane, dispatchId)) {
        this.d.metrics.ordering.inc({ step: 'held' });
        return 'held';
      }
    }
    throw busy();
  }

  /** The dispatch is settled: if it heads its lane, the next held one goes now. */
  async release(s: Pick<DispatchState, 'appId' | 'referenceId' | 'dispatchId'>): Promise<void> {
    const { appId, referenceId, dispatchId } = s;
    for (let round = 0; round < ROUNDS; round++) {
      const lane = await this.d.lanes.read(appId, referenceId);
      if (!lane || lane.head !== dispatchId) return;
      if (await this.advance(appId, referenceId, lane)) return;
    }
    throw busy();
  }

  /** Moves the lane past its head; the new head is made due now. False when the lane changed. */
  private async advance(appId: string, referenceId: string, lane: PrincipalLane) {
    if (!(await this.d.lanes.advance(appId, referenceId, lane))) return false;
    const next = lane.held[0];
    if (next !== undefined) {
      this.d.metrics.ordering.inc({ step: 'released' });
      await this.wake(next);
    }
    return true;
  }

  /**
   * After a dispatch held before its record existed has been written: if its lane moved on to
   * it meanwhile, the release's wake found no record to move, so it is made due now here.
   */
  async written(s: Pick<DispatchState, 'appId' | 'referenceId' | 'dispatchId'>): Promise<void> {
    const lane = await this.current(s.appId, s.referenceId);
    if (!lane || lane.head === s.dispatchId) await this.wake(s.dispatchId);
  }

  /** Makes a held dispatch due now (its recheck entry moved), if it still waits. */
  async wake(dispatchId: string): Promise<void> {
    const s = await this.d.ledger.getDispatchState(dispatchId);
    if (!s?.dueSk || s.deliveryStatus !== 'pending') return; // settled: the next look moves past it
    const to = dueEntry(dispatchId, s.appId, this.now(), 'attempt', this.d.shards);
    const from = { ...to, sk: s.dueSk };
    if (await this.d.ledger.moveDispatchDue(from, to)) this.d.onDue(to);
  }

  private async headPending(lane: PrincipalLane): Promise<boolean> {
    const s = await this.d.ledger.getDispatchState(lane.head);
    if (s) return s.deliveryStatus === 'pending';
    return this.now() - lane.since < MISSING_HEAD_GRACE_MS;
  }
}

const busy = () =>
  new AppError('SVC_UNAVAILABLE', "a principal's webhook lane kept changing; retrying later");
