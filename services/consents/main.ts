import { main } from '../../bin/process.js';
import { consentsService } from './index.js';

await main({ name: 'consents', services: [consentsService], workers: [] });
