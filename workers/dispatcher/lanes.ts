import { AppError } from '../../shared/errors.js';

/**
 * In-memory attempt scheduling, isolated per endpoint. Two lanes with their own budgets:
 * `first` (fresh events) and `retry` (due-index entries), so retries never starve first
 * attempts. Per lane, each endpoint runs at most `perEndpoint` attempts at once and the
 * process at most `total`; endpoints with work take turns (round robin), so a slow endpoint
 * holds only its own slots. Nothing here is durable: a dropped job is redone from its
 * due-index entry.
 */

export type Lane = 'first' | 'retry';
export const LANES: readonly Lane[] = ['first', 'retry'];

export interface LaneLimits {
  perEndpoint: number;
  total: number;
}

export interface LanesOptions<J> {
  limits: Record<Lane, LaneLimits>;
  /** Queued first attempts in the process before `waitForRoom` waits. */
  maxBacklog: number;
  /** Queued jobs per endpoint and lane; `enqueue` refuses beyond it. */
  endpointMaxBacklog: number;
  run: (job: J, lane: Lane) => Promise<void>;
  onError: (err: unknown) => void;
  /** Called after the counts changed (for gauges). */
  onChange?: () => void;
  /** How long `waitForRoom` waits before giving up (a retriable error). */
  roomTimeoutMs?: number;
}

interface EndpointLane<J> {
  queue: J[];
  inFlight: number;
}

type Endpoint<J> = Record<Lane, EndpointLane<J>>;

const zero = () => ({ first: 0, retry: 0 });

export class Lanes<J> {
  private readonly endpoints = new Map<string, Endpoint<J>>();
  /** Per lane: endpoints with queued work and a free slot, in turn order. */
  private readonly ready: Record<Lane, Map<string, EndpointLane<J>>> = {
    first: new Map(),
    retry: new Map(),
  };
  readonly inFlight: Record<Lane, number> = zero();
  readonly queued: Record<Lane, number> = zero();
  private roomWaiters: { resolve: (v: boolean) => void; reject: (e: Error) => void }[] = [];
  private idleWaiters: (() => void)[] = [];
  private closed = false;

  constructor(private readonly o: LanesOptions<J>) {}

  /** Queues a job; false when closed or the endpoint's backlog is full (the caller defers). */
  enqueue(endpoint: string, lane: Lane, job: J): boolean {
    if (this.closed) return false;
    let ep = this.endpoints.get(endpoint);
    if (!ep) {
      ep = { first: { queue: [], inFlight: 0 }, retry: { queue: [], inFlight: 0 } };
      this.endpoints.set(endpoint, ep);
    }
    const l = ep[lane];
    if (l.queue.length >= this.o.endpointMaxBacklog) return false;
    l.queue.push(job);
    this.queued[lane]++;
    if (l.inFlight < this.o.limits[lane].perEndpoint) this.ready[lane].set(endpoint, l);
    this.pump(lane);
    return true;
  }

  /** How many more retry jobs the sweeper should claim now. */
  retryRoom(): number {
    return Math.max(0, 2 * this.o.limits.retry.total - this.queued.retry - this.inFlight.retry);
  }

  /**
   * The consumer's back-pressure: resolves true once the first-attempt backlog has room, or
   * false after `roomTimeoutMs` (kept under the Kafka session timeout; the caller then makes
   * the dispatch durable and leaves its attempt to the due-index). Rejects (retriable) when
   * closed, so a stopping consumer leaves the message uncommitted.
   */
  waitForRoom(): Promise<boolean> {
    if (this.closed)
      return Promise.reject(new AppError('SVC_UNAVAILABLE', 'dispatcher is stopping'));
    if (this.queued.first < this.o.maxBacklog) return Promise.resolve(true);
    return new Promise<boolean>((resolve, reject) => {
      const w = { resolve: (_v: boolean) => undefined as void, reject };
      const timer = setTimeout(() => {
        this.roomWaiters = this.roomWaiters.filter((x) => x !== w);
        resolve(false);
      }, this.o.roomTimeoutMs ?? 10_000);
      w.resolve = (v) => {
        clearTimeout(timer);
        resolve(v);
      };
      w.reject = (e: Error) => {
        clearTimeout(timer);
        reject(e);
      };
      this.roomWaiters.push(w);
    });
  }

  /**
   * Whether the sweeper should hand this endpoint another retry now: at most one queued
   * retry per retry slot, so a saturated endpoint cannot fill the process's retry room.
   */
  acceptsRetry(endpoint: string): boolean {
    if (this.closed) return false;
    const q = this.endpoints.get(endpoint)?.retry.queue.length ?? 0;
    return q < this.o.limits.retry.perEndpoint;
  }

  /**
   * Whether the sweeper should hand this endpoint a deferred first attempt now (a dispatch
   * written with its attempt left to the due-index): while the endpoint's first-attempt queue
   * is under half its backlog, so events arriving from Kafka keep the other half.
   */
  acceptsFirst(endpoint: string): boolean {
    if (this.closed || this.queued.first >= this.o.maxBacklog) return false;
    const q = this.endpoints.get(endpoint)?.first.queue.length ?? 0;
    return q < Math.max(1, Math.floor(this.o.endpointMaxBacklog / 2));
  }

  private pump(lane: Lane): void {
    const limits = this.o.limits[lane];
    while (this.inFlight[lane] < limits.total) {
      const next = this.ready[lane].entries().next();
      if (next.done) break;
      const [endpoint, l] = next.value;
      this.ready[lane].delete(endpoint);
      const job = l.queue.shift()!;
      this.queued[lane]--;
      l.inFlight++;
      this.inFlight[lane]++;
      // Back at the end of the turn order if it can take more.
      if (l.queue.length > 0 && l.inFlight < limits.perEndpoint) this.ready[lane].set(endpoint, l);
      void this.o
        .run(job, lane)
        .catch((err: unknown) => this.o.onError(err))
        .finally(() => this.done(endpoint, lane, l));
    }
    if (lane === 'first') this.wakeRoomWaiters();
    this.o.onChange?.();
  }

  private done(endpoint: string, lane: Lane, l: EndpointLane<J>): void {
    l.inFlight--;
    this.inFlight[lane]--;
    if (l.queue.length > 0 && l.inFlight < this.o.limits[lane].perEndpoint)
      this.ready[lane].set(endpoint, l);
    const ep = this.endpoints.get(endpoint);
    if (ep && LANES.every((x) => ep[x].queue.length === 0 && ep[x].inFlight === 0))
      this.endpoints.delete(endpoint);
    this.pump(lane);
    if (this.inFlight.first + this.inFlight.retry === 0) {
      const ws = this.idleWaiters;
      this.idleWaiters = [];
      for (const w of ws) w();
    }
  }

  private wakeRoomWaiters(): void {
    while (this.roomWaiters.length > 0 && this.queued.first < this.o.maxBacklog)
      this.roomWaiters.shift()!.resolve(true);
  }

  /** Stops taking jobs, fails waiting consumers and drops queued jobs. Returns how many were dropped. */
  close(): number {
    this.closed = true;
    for (const w of this.roomWaiters.splice(0))
      w.reject(new AppError('SVC_UNAVAILABLE', 'dispatcher is stopping'));
    let dropped = 0;
    for (const ep of this.endpoints.values())
      for (const lane of LANES) {
        dropped += ep[lane].queue.length;
        this.queued[lane] -= ep[lane].queue.length;
        ep[lane].queue = [];
      }
    for (const lane of LANES) this.ready[lane].clear();
    this.o.onChange?.();
    return dropped;
  }

  /** Resolves true when no attempt is running, false if `timeoutMs` passes first. */
  drain(timeoutMs: number): Promise<boolean> {
    if (this.inFlight.first + this.inFlight.retry === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), timeoutMs);
      this.idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }
}
