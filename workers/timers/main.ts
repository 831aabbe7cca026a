import { main } from '../../bin/process.js';
import { timersWorker } from './index.js';

await main({ name: 'timers', services: [], workers: [timersWorker] });
