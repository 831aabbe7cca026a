import { randomUUID } from 'node:crypto';
import { POSTBACK_EVENTS } from '../../shared/storage/ledger/flag-entries.js';
import { releaseGaugeLease, takeGaugeLease } from '../../shared/storage/leases/gauge-lease.js';
import type { Runtime } from '../../shared/runtime.js';
import type { ComplianceMetrics } from './metrics.js';

/**
 * Publishes the compliance gauges from the counters in the ledger every interval. The gauges
 * are global counts, and the dashboard sums them across instances, so exactly one worker copy
 * reports them: whoever holds a short lease (an item in the timers table). The others export
 * no series for them, and take over within a few intervals when the holder stops or dies.
 */
export class GaugeReporter {
  private readonly owner = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private holding = false;

  constructor(
    private readonly rt: Runtime,
    private readonly o: { metrics: ComplianceMetrics; now: () => number; intervalMs: number },
  ) {}

  start(): void {
    const tick = () => {
      this.running = this.refresh()
        .catch((err: unknown) => this.rt.log.warn({ err }, 'compliance gauges not refreshed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.o.intervalMs);
        });
    };
    tick();
  }

  /** One refresh: renew (or take) the lease, then read the counters, or clear the gauges. */
  async refresh(): Promise<void> {
    const m = this.o.metrics;
    this.holding = await this.lease();
    if (!this.holding) {
      m.awaiting.reset();
      m.nearDeadline.reset();
      m.unconfirmedErasures.reset();
      return;
    }
    const totals = await this.rt.ledger.readGauges();
    let unconfirmed = 0;
    for (const event of POSTBACK_EVENTS) {
      const t = totals[event]!;
      m.awaiting.set({ event }, t.awaiting);
      m.nearDeadline.set({ event }, t.near);
      unconfirmed += t.unconfirmed;
    }
    m.unconfirmedErasures.set(unconfirmed);
  }

  private async lease(): Promise<boolean> {
    const now = this.o.now();
    return takeGaugeLease(this.rt, this.owner, now, now + 3 * this.o.intervalMs);
  }

  /** Stops refreshing and hands the lease back so another copy reports at once. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    if (!this.holding) return;
    this.holding = false;
    await releaseGaugeLease(this.rt, this.owner).catch((err: unknown) => {
      this.rt.log.warn({ err }, 'gauge lease not released');
    });
  }
}
