import { main } from '../../bin/process.js';
import { adminService } from './index.js';

await main({ name: 'admin', services: [adminService], workers: [] });
