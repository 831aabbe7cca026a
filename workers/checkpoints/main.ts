import { main } from '../../shared/process.js';
import { checkpointWorker } from './index.js';

await main({ name: 'checkpoints', services: [], workers: [checkpointWorker] });
