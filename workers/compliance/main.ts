import { main } from '../../shared/process.js';
import { complianceWorker } from './index.js';

await main({ name: 'compliance', services: [], workers: [complianceWorker] });
