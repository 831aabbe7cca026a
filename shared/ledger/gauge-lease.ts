import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import type { Runtime } from '../runtime.js';
import { isConditionFailure } from '../storage/dynamo.js';

/**
 * The lease of the compliance gauges (`readGauges`, flags.ts): exactly one worker copy reports
 * them, whoever holds this short lease, an item in the timers table. Other global gauges (the
 * duty gauges of the timers worker) pass a lease key of their own.
 */
const LEASE_KEY = { pk: 'lease#compliance-gauges', sk: 'lease' };

/**
 * Takes the lease for `owner` until `untilMs`, or renews it: only if nobody holds it, it ran
 * out before `nowMs`, or `owner` holds it already. False when someone else holds it.
 */
export async function takeGaugeLease(
  rt: Runtime,
  owner: string,
  nowMs: number,
  untilMs: number,
  key: { pk: string; sk: string } = LEASE_KEY,
): Promise<boolean> {
  try {
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.timers,
        Item: { ...key, owner, leaseUntil: untilMs },
        ConditionExpression: 'attribute_not_exists(pk) OR leaseUntil < :now OR #o = :me',
        ExpressionAttributeNames: { '#o': 'owner' },
        ExpressionAttributeValues: { ':now': nowMs, ':me': owner },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** Hands the lease back if `owner` still holds it (otherwise nothing changes). */
export async function releaseGaugeLease(
  rt: Runtime,
  owner: string,
  key: { pk: string; sk: string } = LEASE_KEY,
): Promise<void> {
  try {
    await rt.dynamo.doc.send(
      new DeleteCommand({
        TableName: rt.tables.timers,
        Key: key,
        ConditionExpression: '#o = :me',
        ExpressionAttributeNames: { '#o': 'owner' },
        ExpressionAttributeValues: { ':me': owner },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}
