import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import type { IdempotencyRecord, IdempotencyStore } from '../../http/idempotency.js';
import { isConditionFailure } from '../dynamo.js';

/**
 * Idempotency records in the `idempotency` table, one item per scoped key (pk
 * `{scope}#{Idempotency-Key}`), with the table's TTL attribute `expiresAt` (epoch seconds).
 */
export interface StoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'idempotency'>;
}

export function dynamoIdempotencyStore(deps: StoreDeps): IdempotencyStore {
  const doc = deps.dynamo.doc;
  const TableName = deps.tables.idempotency;
  return {
    async begin(pk, pending, nowS) {
      try {
        await doc.send(
          new PutCommand({
            TableName,
            Item: { pk, state: 'pending', ...pending },
            // An expired item may linger until DynamoDB's TTL sweep removes it: treat it as absent.
            ConditionExpression: 'attribute_not_exists(pk) OR expiresAt < :now',
            ExpressionAttributeValues: { ':now': nowS },
          }),
        );
        return { claimed: true };
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
      }
      const prior = (
        await doc.send(new GetCommand({ TableName, Key: { pk }, ConsistentRead: true }))
      ).Item as IdempotencyRecord | undefined;
      return { claimed: false, prior };
    },

    async finish(pk, answer) {
      await doc.send(
        new UpdateCommand({
          TableName,
          Key: { pk },
          UpdateExpression: 'SET #s = :done, #st = :status, headers = :h, body = :b',
          ExpressionAttributeNames: { '#s': 'state', '#st': 'status' },
          ExpressionAttributeValues: {
            ':done': 'done',
            ':status': answer.status,
            ':h': answer.headers,
            ':b': answer.body,
          },
        }),
      );
    },

    async forget(pk) {
      await doc.send(new DeleteCommand({ TableName, Key: { pk } }));
    },
  };
}
