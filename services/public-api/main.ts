import { main } from '../../shared/process.js';
import { publicApiService } from './index.js';

await main({ name: 'public-api', services: [publicApiService], workers: [] });
