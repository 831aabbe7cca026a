import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { LedgerDeps } from './deps.js';
import { isConditionFailure } from '../dynamo.js';
import { PACKED_ATTR, packDispatch, unpackDispatch } from './packed.js';
import { principalDispatches } from './principal.js';

/**
 * The erasure sweep's part in the ledger: a dispatch keeps the webhook body it sends (for
 * retries and operator replays), and that body carries the principal's user id. Once the
 * principal is scrubbed the stored body gets `data.userId: null`. The chain is untouched: it
 * holds `bodySha256` of what was really sent, never the body, so it still verifies and still
 * proves what went out; a later replay sends the redacted body.
 */
export async function redactDispatchBodies(
  db: LedgerDeps,
  appId: string,
  referenceId: string,
  now: Date,
): Promise<number> {
  let redacted = 0;
  // A listing holds no body (infra/definitions/tables.ts): it names the principal's dispatch
  // items (principal.ts), each read from the table.
  for (const d of await principalDispatches(db, appId, referenceId)) {
    const key = { pk: String(d.pk), sk: String(d.sk) };
    const { Item: item } = await db.dynamo.doc.send(
      new GetCommand({
        TableName: db.tables.ledger,
        Key: key,
        ConsistentRead: true,
      }),
    );
    if (!item) continue;
    const update = redaction(item);
    if (!update) continue;
    try {
      await db.dynamo.doc.send(
        new UpdateCommand({
          TableName: db.tables.ledger,
          Key: key,
          UpdateExpression: `SET #z = :z, bodyRedactedAt = :at`,
          // Only the body that was read: a concurrent change is picked up by the next sweep.
          ConditionExpression: '#z = :old',
          ExpressionAttributeNames: { '#z': PACKED_ATTR },
          ExpressionAttributeValues: {
            ':z': update.value,
            ':old': update.old,
            ':at': now.toISOString(),
          },
        }),
      );
      redacted++;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }
  return redacted;
}

/**
 * What redacts a stored dispatch item's body: its packed attribute (packed.ts) packed again
 * around the redacted body. Undefined when there is nothing to redact (or a packed attribute
 * that cannot be read back).
 */
function redaction(item: Record<string, unknown>) {
  const full = unpackDispatch(item);
  const body = full.packedUnreadable ? undefined : redactedBody(full.body);
  if (body === undefined) return undefined;
  return { old: item[PACKED_ATTR], value: packDispatch({ ...full, body })[PACKED_ATTR] };
}

/** The body with `data.userId` nulled, or undefined when it holds none (or is not an event). */
export function redactedBody(body: unknown): string | undefined {
  if (typeof body !== 'string') return undefined;
  let parsed: { data?: { userId?: unknown } };
  try {
    parsed = JSON.parse(body) as typeof parsed;
  } catch {
    return undefined;
  }
  if (!parsed?.data || parsed.data.userId === null || parsed.data.userId === undefined)
    return undefined;
  parsed.data.userId = null;
  return JSON.stringify(parsed);
}
