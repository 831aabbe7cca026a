import { randomUUID } from 'node:crypto';
import { checkBoardReport } from '../../shared/storage/breaches/store.js';
import {
  DUTY_KINDS,
  OPEN_FLAGS,
  dutyMetrics,
  readDutyGauges,
  type DutyEntry,
} from '../../shared/storage/duties/store.js';
import { checkGrievance } from '../../shared/storage/grievances/store.js';
import { releaseGaugeLease, takeGaugeLease } from '../../shared/storage/leases/gauge-lease.js';
import type { TimerEntry } from '../../shared/storage/timers/due.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * `duty#`: the deadlines of grievances and of breach reports to the Board. Each check records
 * the flag the clock has reached (at_risk, then breach) and schedules the next one.
 */
export async function fireDuty(rt: Runtime, e: TimerEntry, nowMs: number): Promise<void> {
  const entry = e as DutyEntry;
  const change =
    entry.kind === 'grievance'
      ? await checkGrievance(rt, entry, nowMs)
      : entry.kind === 'board_report'
        ? await checkBoardReport(rt, entry, nowMs)
        : undefined;
  if (change)
    rt.log.info(
      { kind: entry.kind, appId: entry.appId, id: entry.id, flag: change.flag },
      'duty flag changed',
    );
}

const LEASE = { pk: 'lease#duty-gauges', sk: 'lease' };

/**
 * Publishes `svc_grievances_open` and `svc_board_reports_pending` from the counters kept with
 * the records. The gauges are global counts, so one copy reports them: whoever holds a short
 * lease; the others export no series and take over when it stops.
 */
export class DutyGaugeReporter {
  private readonly owner = randomUUID();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private holding = false;
  private readonly m;

  constructor(
    private readonly rt: Runtime,
    private readonly o: { now: () => number; intervalMs: number },
  ) {
    this.m = dutyMetrics(rt.registry);
  }

  start(): void {
    const tick = () => {
      this.running = this.refresh()
        .catch((err: unknown) => this.rt.log.warn({ err }, 'duty gauges not refreshed'))
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.o.intervalMs);
        });
    };
    tick();
  }

  async refresh(): Promise<void> {
    const now = this.o.now();
    this.holding = await takeGaugeLease(
      this.rt,
      this.owner,
      now,
      now + 3 * this.o.intervalMs,
      LEASE,
    );
    if (!this.holding) {
      for (const k of DUTY_KINDS) this.m.open[k].reset();
      return;
    }
    const totals = await readDutyGauges(this.rt);
    for (const k of DUTY_KINDS)
      for (const flag of OPEN_FLAGS) this.m.open[k].set({ flag }, Math.max(0, totals[k][flag]));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    if (!this.holding) return;
    this.holding = false;
    await releaseGaugeLease(this.rt, this.owner, LEASE).catch((err: unknown) =>
      this.rt.log.warn({ err }, 'duty gauge lease not released'),
    );
  }
}
