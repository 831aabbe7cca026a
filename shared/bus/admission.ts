/**
 * How many messages a consumer lets its handler work on at once, adapted to what the handler's
 * dependencies take (additive increase, multiplicative decrease, as TCP does for a congested
 * link).
 *
 * Without it, a consumer that finds thousands of messages waiting (a backlog after Kafka
 * stalled, or a restart that marks them all uncertain) hands all of them over at once. If the
 * store then cannot keep up, every message times out, and every one retries on its own clock,
 * so the store never gets a quiet moment to catch up: the backlog keeps it saturated long
 * after the fault ended. With the gate, a transient failure halves the limit, retries queue
 * for a slot like everything else, and each success adds one slot back, up to `max`. A wave of
 * failures counts once: only work admitted since the last cut can cut again (TCP's "once per
 * round trip"), so 500 messages that time out together halve the limit once, not 500 times.
 *
 * Pure bookkeeping (no Kafka, no timers of its own beyond the waiters it wakes), unit-tested.
 */
export interface AdmissionOptions {
  /** The limit when healthy: the most messages in flight at once. */
  max: number;
  /** The limit never falls below this (1: one probe at a time while everything fails). */
  min?: number;
}

/** The cut epoch a message was admitted in; `release` needs it back. */
export type Ticket = number;

export class Admission {
  private limitValue: number;
  private inFlightValue = 0;
  private epoch = 0;
  private waiters: (() => void)[] = [];
  private readonly min: number;

  constructor(private readonly o: AdmissionOptions) {
    this.limitValue = o.max;
    this.min = Math.max(1, o.min ?? 1);
  }

  get limit(): number {
    return Math.floor(this.limitValue);
  }

  get inFlight(): number {
    return this.inFlightValue;
  }

  /** Slots free now. */
  room(): number {
    return Math.max(0, this.limit - this.inFlightValue);
  }

  /** Takes `n` slots (the caller checked `room()`; taking more only delays later callers). */
  take(n: number): Ticket {
    this.inFlightValue += n;
    return this.epoch;
  }

  /**
   * Gives a slot back with the message's outcome. `ok`: one slot more, up to `max`. `failed`
   * (transient): the limit falls to half of the smaller of itself and what was in flight,
   * unless the work was admitted before the last cut (the same wave). `neutral` (dead-lettered,
   * abandoned on a rebalance): the slot is only freed.
   */
  release(outcome: 'ok' | 'failed' | 'neutral', ticket: Ticket): void {
    const inFlight = this.inFlightValue;
    this.inFlightValue = Math.max(0, inFlight - 1);
    if (outcome === 'ok') this.limitValue = Math.min(this.o.max, this.limitValue + 1);
    else if (outcome === 'failed' && ticket === this.epoch) {
      this.epoch++;
      this.limitValue = Math.max(this.min, Math.min(this.limitValue, inFlight) / 2);
    }
    if (this.room() > 0) this.wake();
  }

  /** Resolves true once a slot is free, false if `timeoutMs` passes first. */
  waitForRoom(timeoutMs: number): Promise<boolean> {
    if (this.room() > 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve(false);
      }, timeoutMs);
      const wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.waiters.push(wake);
    });
  }

  /** Waits (re-checking `live` every second) until a slot is free and takes it. */
  async acquire(live: () => boolean): Promise<Ticket | undefined> {
    while (this.room() === 0) {
      if (!live()) return undefined;
      await this.waitForRoom(1_000);
    }
    return this.take(1);
  }

  private wake(): void {
    // Wake one waiter per free slot; the rest keep waiting (or time out and look again).
    const n = Math.min(this.room(), this.waiters.length);
    for (const w of this.waiters.splice(0, n)) w();
  }
}
