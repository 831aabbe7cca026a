import type { WorkerModule } from '../../shared/module.js';
import { startRelay } from '../../shared/storage/outbox/relay.js';

/**
 * Publishes the commits of writers that stopped (killed, or their machine gone) from their
 * watermark on (`rt.relay`); a live writer publishes its own (shared/storage/outbox/outbox.ts).
 */
export const relayWorker: WorkerModule = {
  name: 'outbox-relay',
  start: async (rt) =>
    startRelay(rt.relay, {
      intervalMs: rt.config.OUTBOX_RELAY_INTERVAL_MS,
      staleMs: rt.config.OUTBOX_WRITER_STALE_MS,
      log: rt.log.child({ worker: 'outbox-relay' }),
    }),
};
