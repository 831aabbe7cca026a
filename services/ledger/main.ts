import { main } from '../../bin/process.js';
import { keysService } from '../keys/index.js';
import { ledgerService } from './index.js';

// The public keys travel with the ledger API: auditors verify its checkpoints with them.
await main({ name: 'ledger', services: [ledgerService, keysService], workers: [] });
