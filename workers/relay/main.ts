import { main } from '../../bin/process.js';
import { relayWorker } from './index.js';

await main({ name: 'outbox-relay', services: [], workers: [relayWorker] });
