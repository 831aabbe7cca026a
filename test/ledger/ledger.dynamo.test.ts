import type { Runtime } from '../../shared/runtime.js';
import { testRuntime } from '../helpers/stack.js';
import { ledgerConformance } from './ledger.conformance.js';

// The DynamoDB adapter (shared/storage/ledger/dynamo-ledger.ts) on DynamoDB Local, as the
// runtime builds it.
ledgerConformance('DynamoDB', async () => {
  const rt: Runtime = await testRuntime('ledger-conformance');
  return {
    ledger: rt.ledger,
    shards: rt.config.TIMER_SHARDS,
    claim: (postbackId) => rt.processed.claimItem('ledger-conformance', postbackId),
    close: () => rt.close(),
  };
});
