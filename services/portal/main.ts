import { main } from '../../bin/process.js';
import { portalService } from './index.js';

await main({ name: 'portal', services: [portalService], workers: [] });
