import { main } from '../../bin/process.js';
import { publicApiService } from './index.js';

await main({ name: 'public-api', services: [publicApiService], workers: [] });
