import type { WorkerModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';
import { emptyTally, fireExpiry, fireSlaCheck, timersMetrics } from './actions.js';
import { DutyGaugeReporter, fireDuty } from './duties.js';
import { FamilySweeper, type SweepStats } from './sweep.js';

/** How long a timers worker holds a due entry it fired; past it another copy fires it again. */
const TIMER_LEASE_MS = 60_000;

export interface TimersOptions {
  /** The clock deciding what is due (epoch ms); tests inject one. */
  now?: () => number;
}

/**
 * Fires what the due-index says is due (docs/architecture.md, The compliance worker, timers and the
 * erasure sweep): SLA checks (handed to the compliance worker), expiry reminders, expiries, the
 * 30-day erasure sweep, and the grievance and Board-report deadlines (duties.ts). Three families
 * of the index, each swept by shard from its watermark, so a sweep reads only what is due and any
 * number of copies can run.
 */
export function createTimersWorker(o: TimersOptions = {}): WorkerModule {
  const now = o.now ?? Date.now;
  return {
    name: 'timers',
    start: async (rt: Runtime) => {
      const c = rt.config;
      const log = rt.log.child({ worker: 'timers' });
      const metrics = timersMetrics(rt.registry);
      const count = (s: SweepStats) => {
        for (const outcome of ['done', 'failed'] as const)
          for (const [kind, n] of Object.entries(s[outcome]))
            metrics.fired.inc({ kind, outcome }, n);
      };
      const common = {
        shards: c.TIMER_SHARDS,
        intervalMs: c.TIMER_SWEEP_INTERVAL_MS,
        leaseMs: TIMER_LEASE_MS,
        now,
        log,
      };
      const sla = new FamilySweeper(rt, {
        ...common,
        family: 'sla',
        act: (e) => fireSlaCheck(rt, e),
        onSweep: (s) => {
          count(s);
          log.info(
            { family: 'sla', fired: s.done, failed: s.failed, taken: s.taken },
            'timers sweep',
          );
        },
      });
      let tally = emptyTally();
      const expiry = new FamilySweeper(rt, {
        ...common,
        // Reminders, expiries, scrubs and inactivity are due days apart: a sweep every
        // EXPIRY_SWEEP_INTERVAL_MS (10 s) instead of every second saves the store two sources'
        // worth of queries per shard and second.
        intervalMs: c.EXPIRY_SWEEP_INTERVAL_MS,
        family: 'expiry',
        // A new transaction's first reminder or expiry is derived from the transaction item.
        derivedFrom: [rt.tables.entities],
        act: (e, nowMs) => fireExpiry(rt, e, new Date(nowMs), tally),
        onSweep: (s) => {
          count(s);
          log.info(
            {
              family: 'expiry',
              fired: s.done,
              failed: s.failed,
              taken: s.taken,
              events: tally.events,
              scrubbed: tally.scrub,
            },
            'timers sweep',
          );
          tally = emptyTally();
        },
      });
      const duty = new FamilySweeper(rt, {
        ...common,
        // Grievance and breach-report deadlines are hours and days away: like expiry, a sweep
        // every DUTY_SWEEP_INTERVAL_MS (10 s).
        intervalMs: c.DUTY_SWEEP_INTERVAL_MS,
        family: 'duty',
        act: (e, nowMs) => fireDuty(rt, e, nowMs),
        onSweep: (s) => {
          count(s);
          log.info(
            { family: 'duty', fired: s.done, failed: s.failed, taken: s.taken },
            'timers sweep',
          );
        },
      });
      const gauges = new DutyGaugeReporter(rt, { now, intervalMs: c.COMPLIANCE_GAUGE_INTERVAL_MS });
      const sweepers = [sla, expiry, duty, gauges];
      try {
        for (const s of [sla, expiry, duty]) await s.start();
        gauges.start();
      } catch (err) {
        await Promise.allSettled(sweepers.map((s) => s.stop()));
        throw err;
      }
      log.info({ shards: c.TIMER_SHARDS }, 'timers worker started');
      let stopping: Promise<void> | undefined;
      return {
        stop: () =>
          (stopping ??= (async () => {
            const results = await Promise.allSettled(sweepers.map((s) => s.stop()));
            for (const r of results)
              if (r.status === 'rejected') log.warn({ err: r.reason }, 'timers stop step failed');
            log.info('timers worker stopped');
          })()),
      };
    },
  };
}

export const timersWorker: WorkerModule = createTimersWorker();
