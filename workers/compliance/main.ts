import { main } from '../../bin/process.js';
import { complianceWorker } from './index.js';

await main({ name: 'compliance', services: [], workers: [complianceWorker] });
