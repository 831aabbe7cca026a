import { main } from '../../bin/process.js';
import { checkpointWorker } from './index.js';

await main({ name: 'checkpoints', services: [], workers: [checkpointWorker] });
