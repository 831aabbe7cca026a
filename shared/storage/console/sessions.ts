import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import { sha256hex } from '../../domain/crypto.js';

/**
 * Console sessions in the `idempotency` table under `console-session#{sha256(id)}` (so a copy of
 * the table holds no usable id), with the table's TTL attribute `expiresAt` (epoch seconds) set
 * to the session's end: DynamoDB removes it some time after; readers check the time themselves.
 */
export interface StoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'idempotency'>;
}

const itemKey = (id: string) => ({ pk: `console-session#${sha256hex(id)}` });

export function dynamoSessionStore(deps: StoreDeps) {
  const doc = deps.dynamo.doc;
  const TableName = deps.tables.idempotency;
  return {
    /** Puts a new session (refused if its id exists) until `expiresAtMs`. */
    async create(id: string, session: Record<string, unknown>, expiresAtMs: number): Promise<void> {
      await doc.send(
        new PutCommand({
          TableName,
          Item: { ...itemKey(id), ...session, expiresAt: Math.ceil(expiresAtMs / 1000) },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },
    /** The session as stored (a consistent read; expired ones included). */
    async load(id: string): Promise<Record<string, unknown> | undefined> {
      const r = await doc.send(
        new GetCommand({ TableName, Key: itemKey(id), ConsistentRead: true }),
      );
      return r.Item;
    },
    async delete(id: string): Promise<void> {
      await doc.send(new DeleteCommand({ TableName, Key: itemKey(id) }));
    },
  };
}
