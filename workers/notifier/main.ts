import { main } from '../../bin/process.js';
import { notifierWorker } from './index.js';

await main({ name: 'notifier', services: [], workers: [notifierWorker] });
