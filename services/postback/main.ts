import { main } from '../../bin/process.js';
import { postbackService } from './index.js';

await main({ name: 'postback', services: [postbackService], workers: [] });
