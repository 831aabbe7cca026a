import { main } from '../../bin/process.js';
import { dispatchAdminService } from './index.js';

await main({ name: 'dispatch-admin', services: [dispatchAdminService], workers: [] });
