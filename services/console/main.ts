import { main } from '../../bin/process.js';
import { consoleService } from './index.js';

await main({ name: 'console', services: [consoleService], workers: [] });
