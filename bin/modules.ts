import type { ServiceModule, WorkerModule } from '../shared/process.js';
import { adminService } from '../services/admin/index.js';
import { consentsService } from '../services/consents/index.js';
import { publicApiService } from '../services/public-api/index.js';
import { widgetService } from '../services/widget/index.js';
import { relayWorker } from '../workers/relay/index.js';

/** Everything `npm start` runs in one process. Each also has its own main.ts to run alone. */
export const allServices: ServiceModule[] = [
  adminService,
  consentsService,
  publicApiService,
  widgetService,
];
export const allWorkers: WorkerModule[] = [relayWorker];
