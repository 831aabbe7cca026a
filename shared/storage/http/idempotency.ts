import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import { isConditionFailure } from '../dynamo.js';

/**
 * Idempotency records in the `idempotency` table, one item per scoped key (pk
 * `{scope}#{Idempotency-Key}`), with the table's TTL attribute `expiresAt` (epoch seconds).
 */
export interface StoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'idempotency'>;
}

/** A record as stored (shared/http/idempotency.ts, `IdempotencyRecord`, is what reads it). */
interface StoredRecord {
  pk: string;
  state: 'pending' | 'done';
  requestHash: string;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  client?: string;
  expiresAt: number;
}

/** The store the idempotency middleware declares (shared/http/idempotency.ts). */
export function dynamoIdempotencyStore(deps: StoreDeps) {
  const doc = deps.dynamo.doc;
  const TableName = deps.tables.idempotency;
  return {
    async begin(
      pk: string,
      pending: Pick<StoredRecord, 'requestHash' | 'client' | 'expiresAt'>,
      nowS: number,
    ): Promise<{ claimed: true } | { claimed: false; prior: StoredRecord | undefined }> {
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
        return { claimed: true as const };
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
      }
      const prior = (
        await doc.send(new GetCommand({ TableName, Key: { pk }, ConsistentRead: true }))
      ).Item as StoredRecord | undefined;
      return { claimed: false as const, prior };
    },

    async finish(
      pk: string,
      answer: { status: number; headers: Record<string, string>; body: string },
    ): Promise<void> {
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

    async forget(pk: string): Promise<void> {
      await doc.send(new DeleteCommand({ TableName, Key: { pk } }));
    },
  };
}
