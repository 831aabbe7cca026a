import type { ServiceModule, WorkerModule } from '../shared/process.js';
import { relayWorker } from '../workers/relay/index.js';

/** Everything `npm start` runs in one process. Each also has its own main.ts to run alone. */
export const allServices: ServiceModule[] = [];
export const allWorkers: WorkerModule[] = [relayWorker];
