import { main } from '../../shared/process.js';
import { timersWorker } from './index.js';

await main({ name: 'timers', services: [], workers: [timersWorker] });
