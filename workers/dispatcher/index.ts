import type { WorkerModule } from '../../shared/module.js';
import { startDispatcher } from './dispatcher.js';

/**
 * Delivers every consent event to its app's webhook URL: signed, retried from a durable
 * due-index, isolated per endpoint, every attempt written to the hash-chained ledger.
 */
export const dispatcherWorker: WorkerModule = {
  name: 'dispatcher',
  start: (rt) => startDispatcher(rt),
};
