import {
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import type { ApiKeyStore } from '../../domain/apiKeys.js';
import type { ApiKey, ApiKeyScope } from '../../domain/types.js';
import { AppError } from '../../errors.js';
import { isConditionFailure } from '../dynamo.js';
import { queryAll, queryPages } from '../query.js';

/**
 * API keys in the `entities` table: pk `APIKEY#{sha256(key)}`, sk `APIKEY`; gsi1
 * `APP#{appId}#APIKEYS` / `{createdAt}#{id}` lists an app's keys.
 */
export interface StoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities'>;
}

const listPk = (appId: string) => `APP#${appId}#APIKEYS`;

function toApiKey(item: Record<string, unknown>): ApiKey {
  return {
    id: item.id as string,
    appId: item.appId as string,
    name: item.name as string,
    scopes: item.scopes as ApiKeyScope[],
    createdAt: item.createdAt as string,
    revokedAt: (item.revokedAt as string | null | undefined) ?? null,
  };
}

export function dynamoApiKeyStore(deps: StoreDeps): ApiKeyStore {
  const doc = deps.dynamo.doc;
  const TableName = deps.tables.entities;

  /** Finds the stored item (by its hash key) of key `id` of this app. */
  async function findKeyPk(appId: string, id: string): Promise<string | undefined> {
    const pages = queryPages(doc, {
      TableName,
      IndexName: 'gsi1',
      KeyConditionExpression: 'gsi1pk = :pk',
      FilterExpression: '#id = :id',
      ExpressionAttributeNames: { '#id': 'id' },
      ExpressionAttributeValues: { ':pk': listPk(appId), ':id': id },
      ProjectionExpression: 'pk',
    });
    for await (const items of pages) {
      const pk = items[0]?.pk as string | undefined;
      if (pk) return pk;
    }
    return undefined;
  }

  return {
    async create(apiKey, hash) {
      await doc.send(
        new PutCommand({
          TableName,
          Item: {
            ...apiKey,
            pk: `APIKEY#${hash}`,
            sk: 'APIKEY',
            gsi1pk: listPk(apiKey.appId),
            gsi1sk: `${apiKey.createdAt}#${apiKey.id}`,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    async list(appId) {
      const items = await queryAll(doc, {
        TableName,
        IndexName: 'gsi1',
        KeyConditionExpression: 'gsi1pk = :pk',
        ExpressionAttributeValues: { ':pk': listPk(appId) },
      });
      return items.map(toApiKey);
    },

    async revoke(appId, id, at) {
      const pk = await findKeyPk(appId, id);
      if (!pk) return undefined;
      try {
        const r = await doc.send(
          new UpdateCommand({
            TableName,
            Key: { pk, sk: 'APIKEY' },
            UpdateExpression: 'SET revokedAt = :now',
            ConditionExpression:
              'attribute_exists(pk) AND (attribute_not_exists(revokedAt) OR attribute_type(revokedAt, :nullType))',
            ExpressionAttributeValues: { ':now': at, ':nullType': 'NULL' },
            ReturnValues: 'ALL_NEW',
          }),
        );
        return toApiKey(r.Attributes ?? {});
      } catch (err) {
        if (!isConditionFailure(err)) throw err;
        // Revoked already: the key as it was revoked.
        const r = await doc.send(
          new GetCommand({ TableName, Key: { pk, sk: 'APIKEY' }, ConsistentRead: true }),
        );
        if (!r.Item) throw new AppError('SVC_NOT_FOUND', 'Unknown API key');
        return toApiKey(r.Item);
      }
    },

    async byHash(hash) {
      const r = await doc.send(
        new GetCommand({
          TableName,
          Key: { pk: `APIKEY#${hash}`, sk: 'APIKEY' },
          ConsistentRead: true,
        }),
      );
      return r.Item ? toApiKey(r.Item) : undefined;
    },
  };
}
