import { main } from '../../bin/process.js';
import { dispatcherWorker } from './index.js';

await main({ name: 'dispatcher', services: [], workers: [dispatcherWorker] });
