import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { writeItems } from '../../shared/storage/dynamo.js';
import {
  keys,
  putClaim,
  putPrincipal,
  putTransaction,
  putUser,
} from '../../shared/storage/consents/repository.js';
import { expiryEntry } from '../../shared/storage/consents/timers.js';
import { testRuntime } from '../helpers/stack.js';
import { sweepStoreConformance } from './sweeps.conformance.js';

/** The DynamoDB adapter of the sweep ports, on DynamoDB Local with tables of its own. */
sweepStoreConformance('dynamodb', async () => {
  const rt = await testRuntime('sweeps-dynamo');
  const doc = rt.dynamo.doc;
  const get = async (TableName: string, Key: Record<string, unknown>) =>
    (await doc.send(new GetCommand({ TableName, Key, ConsistentRead: true }))).Item;
  const entities = (key: { pk: string; sk: string }) => get(rt.tables.entities, key);
  return {
    // The adapter as the runtime builds it (shared/storage/consents/sweeps.ts).
    stores: rt.sweeps,
    putPrincipal: (p) => writeItems(doc, [putPrincipal(rt, p)]),
    putTransaction: (t) => writeItems(doc, [putTransaction(rt, t)]),
    putClaim: (ref, u) => writeItems(doc, [putClaim(rt, ref, u)]),
    putUserPointer: (u) => writeItems(doc, [putUser(rt, u)]),
    principalAt: (appId, ref) => entities(keys.principal(appId, ref)),
    transactionAt: (t) => entities(keys.transaction(t.appId, t.referenceId, t.transactionId)),
    userPointer: (appId, userId) => entities(keys.user(appId, userId)),
    hasTimer: async (t) => {
      const e = expiryEntry(t.kind, t, t.dueAtMs, rt.config.TIMER_SHARDS);
      return (await get(rt.tables.timers, { pk: e.pk, sk: e.sk })) !== undefined;
    },
    close: () => rt.close(),
  };
});
