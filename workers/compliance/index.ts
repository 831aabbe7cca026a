import { topicDefs } from '../../infra/definitions/topics.js';
import { runtimeConsumer } from '../../shared/bus/consumer.js';
import { ensureFamily } from '../../shared/storage/timers/due.js';
import type { WorkerModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';
import { GaugeReporter } from './gauges.js';
import { CONSUMER, postbacksHandler } from './handler.js';
import { complianceMetrics } from './metrics.js';

export interface ComplianceOptions {
  /** The clock SLA decisions use (epoch ms); tests inject one. */
  now?: () => number;
}

/**
 * Records postbacks in the ledger and keeps every dispatch's compliance flag (docs/api.md,
 * Compliance flags; docs/architecture.md, The compliance worker, timers and the erasure sweep): the
 * only writer of flag entries, fed by the postback API and by the timers worker's SLA checks, both
 * through the postbacks topic. Also reports the awaiting/erasure gauges.
 */
export function createComplianceWorker(o: ComplianceOptions = {}): WorkerModule {
  const now = o.now ?? Date.now;
  return {
    name: 'compliance',
    start: async (rt: Runtime) => {
      const c = rt.config;
      const log = rt.log.child({ worker: 'compliance' });
      const metrics = complianceMetrics(rt.registry);
      // This worker writes SLA checks: their shard watermarks must exist before the first one.
      await ensureFamily(rt, 'sla', c.TIMER_SHARDS, now());
      const gauges = new GaugeReporter(rt, {
        metrics,
        now,
        intervalMs: c.COMPLIANCE_GAUGE_INTERVAL_MS,
      });
      const runner = runtimeConsumer(rt, {
        name: CONSUMER,
        handlers: { [rt.topics.postbacks]: postbacksHandler(rt, { now, metrics }) },
        log,
        // Each handler is a few DynamoDB calls; partitions (dispatches) progress independently.
        partitionsConsumedConcurrently: topicDefs.postbacks.partitions,
      });
      try {
        await runner.start();
        gauges.start();
      } catch (err) {
        await runner.stop();
        await gauges.stop();
        throw err;
      }
      log.info('compliance worker started');
      let stopping: Promise<void> | undefined;
      return {
        stop: () =>
          (stopping ??= (async () => {
            for (const [name, run] of [
              ['consumer', () => runner.stop()],
              ['gauges', () => gauges.stop()],
            ] as const) {
              try {
                await run();
              } catch (err) {
                log.warn({ err, step: name }, 'compliance stop step failed');
              }
            }
            log.info('compliance worker stopped');
          })()),
      };
    },
  };
}

export const complianceWorker: WorkerModule = createComplianceWorker();
