import { main } from '../../shared/process.js';
import { postbackService } from './index.js';

await main({ name: 'postback', services: [postbackService], workers: [] });
