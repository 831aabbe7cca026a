import { main } from '../shared/process.js';
import { allServices, allWorkers } from './modules.js';

await main({ name: 'svc-consent', services: allServices, workers: allWorkers });
