import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { attemptSk, dispatchPk } from '../../shared/ledger/dispatches.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * Changes one field of a dispatch's first attempt where it is stored: its own `ATT#001` item,
 * or the dispatch item's `firstAttempt` when the dispatch was created with it. What an
 * attacker with write access to the table could do; verification must notice.
 */
export async function tamperFirstAttempt(
  rt: Runtime,
  dispatchId: string,
  field: string,
  value: unknown,
): Promise<void> {
  const pk = dispatchPk(dispatchId);
  const own = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.ledger, Key: { pk, sk: attemptSk(1) } }),
  );
  await rt.dynamo.doc.send(
    new UpdateCommand({
      TableName: rt.tables.ledger,
      Key: { pk, sk: own.Item ? attemptSk(1) : 'DSP' },
      UpdateExpression: own.Item ? 'SET #f = :v' : 'SET firstAttempt.#f = :v',
      ConditionExpression: own.Item ? 'attribute_exists(pk)' : 'attribute_exists(firstAttempt)',
      ExpressionAttributeNames: { '#f': field },
      ExpressionAttributeValues: { ':v': value },
    }),
  );
}
