/**
 * How many API requests admission control lets in at once while the process's event loop lags
 * (additive increase, multiplicative decrease).
 *
 * A request waits unread in the kernel's queue for as long as the event loop is busy elsewhere,
 * and the process cannot see that wait. Under a burst on a machine short of CPU, the work of
 * the requests it admits keeps the loop so busy that it reads the next ones seconds late, and
 * in-flight limits alone do not bind (the requests read stay few; those unread are many):
 * callers give up unanswered while the process still stores what they sent. The lag of the
 * event loop is what the process can see of it. While a window's lag is above `shedMs`, the
 * limit halves (not below `min`), so more requests are refused at once, cheaply, and those
 * waiting are read sooner; once the lag is back under half of `shedMs`, it grows again by an
 * eighth of `max` a window.
 *
 * Pure bookkeeping (the caller feeds it each window's lag), unit-tested.
 */
export interface LagLimitOptions {
  /** The limit when the loop keeps up (HTTP_MAX_IN_FLIGHT). */
  max: number;
  /** A window's event-loop lag (ms) above which the limit halves; 0 turns the control off. */
  shedMs: number;
  /** The limit never falls below this. */
  min?: number;
}

export class LagLimit {
  private value: number;
  private readonly min: number;

  constructor(private readonly o: LagLimitOptions) {
    this.value = o.max;
    this.min = Math.min(o.max, Math.max(1, o.min ?? 4));
  }

  get limit(): number {
    return this.value;
  }

  /** The lag (ms) of the window that just ended; returns the limit for the next one. */
  observe(lagMs: number): number {
    if (this.o.shedMs <= 0) return this.value;
    if (lagMs > this.o.shedMs) this.value = Math.max(this.min, Math.floor(this.value / 2));
    else if (lagMs <= this.o.shedMs / 2)
      this.value = Math.min(this.o.max, this.value + Math.max(1, Math.ceil(this.o.max / 8)));
    return this.value;
  }
}
