import type { ServiceModule, WorkerModule } from '../shared/module.js';
import { adminService } from '../services/admin/index.js';
import { consentsService } from '../services/consents/index.js';
import { consoleService } from '../services/console/index.js';
import { dispatchAdminService } from '../services/dispatch-admin/index.js';
import { keysService } from '../services/keys/index.js';
import { ledgerService } from '../services/ledger/index.js';
import { portalService } from '../services/portal/index.js';
import { postbackService } from '../services/postback/index.js';
import { publicApiService } from '../services/public-api/index.js';
import { widgetAssetsService } from '../services/widget-assets/index.js';
import { widgetService } from '../services/widget/index.js';
import { checkpointWorker } from '../workers/checkpoints/index.js';
import { complianceWorker } from '../workers/compliance/index.js';
import { dispatcherWorker } from '../workers/dispatcher/index.js';
import { notifierWorker } from '../workers/notifier/index.js';
import { relayWorker } from '../workers/relay/index.js';
import { timersWorker } from '../workers/timers/index.js';

/** Everything `npm start` runs in one process. Each also has its own main.ts to run alone. */
export const allServices: ServiceModule[] = [
  adminService,
  dispatchAdminService,
  consentsService,
  publicApiService,
  widgetService,
  widgetAssetsService,
  postbackService,
  portalService,
  consoleService,
  ledgerService,
  keysService,
];
export { relayWorker };
export const allWorkers: WorkerModule[] = [
  relayWorker,
  dispatcherWorker,
  complianceWorker,
  timersWorker,
  notifierWorker,
  checkpointWorker,
];
