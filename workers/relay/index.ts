import type { WorkerModule } from '../../shared/process.js';
import { startRelay } from '../../shared/outbox/outbox.js';

/** Publishes outbox items the fast path could not (e.g. Kafka was down at write time). */
export const relayWorker: WorkerModule = {
  name: 'outbox-relay',
  start: async (rt) =>
    startRelay(rt.outbox, {
      intervalMs: rt.config.OUTBOX_RELAY_INTERVAL_MS,
      minAgeMs: rt.config.OUTBOX_RELAY_MIN_AGE_MS,
      log: rt.log.child({ worker: 'outbox-relay' }),
    }),
};
