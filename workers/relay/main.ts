import { main } from '../../shared/process.js';
import { relayWorker } from './index.js';

await main({ name: 'outbox-relay', services: [], workers: [relayWorker] });
