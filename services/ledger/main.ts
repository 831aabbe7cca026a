import { main } from '../../shared/process.js';
import { ledgerService } from './index.js';

await main({ name: 'ledger', services: [ledgerService], workers: [] });
