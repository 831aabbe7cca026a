import { DeleteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import { isConditionFailure } from '../dynamo.js';

/** What a lease's writes use (a caller holding the whole runtime passes it as it is). */
export interface LeaseDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'timers'>;
}

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
  db: LeaseDeps,
  owner: string,
  nowMs: number,
  untilMs: number,
  key: { pk: string; sk: string } = LEASE_KEY,
): Promise<boolean> {
  try {
    await db.dynamo.doc.send(
      new PutCommand({
        TableName: db.tables.timers,
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
  db: LeaseDeps,
  owner: string,
  key: { pk: string; sk: string } = LEASE_KEY,
): Promise<void> {
  try {
    await db.dynamo.doc.send(
      new DeleteCommand({
        TableName: db.tables.timers,
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
