import { GetCommand, PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { AppError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { isConditionFailure } from '../storage/dynamo.js';
import { queryAll, queryPages } from '../storage/query.js';
import { cached, invalidateCache } from './cache.js';
import { sha256hex } from './crypto.js';
import { newApiKey, newApiKeyId, patterns } from './ids.js';
import type { ApiKey, ApiKeyScope } from './types.js';

/**
 * API keys (record API bearer) in the `entities` table: pk `APIKEY#{sha256(key)}`, sk `APIKEY`;
 * gsi1 `APP#{appId}#APIKEYS` / `{createdAt}#{id}` lists an app's keys. The key itself is shown
 * once at creation and stored only as its hash.
 */
export const API_KEY_SCOPES = [
  'consents:read',
  'consents:write',
  'ledger:read',
  'console',
] as const satisfies readonly ApiKeyScope[];

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

/** The caller has checked that the app exists. */
export async function createApiKey(
  rt: Runtime,
  appId: string,
  input: { name: string; scopes: ApiKeyScope[] },
): Promise<{ apiKey: ApiKey; key: string }> {
  const key = newApiKey();
  const apiKey: ApiKey = {
    id: newApiKeyId(),
    appId,
    name: input.name,
    scopes: [...new Set(input.scopes)],
    createdAt: new Date().toISOString(),
    revokedAt: null,
  };
  await rt.dynamo.doc.send(
    new PutCommand({
      TableName: rt.tables.entities,
      Item: {
        ...apiKey,
        pk: `APIKEY#${sha256hex(key)}`,
        sk: 'APIKEY',
        gsi1pk: listPk(appId),
        gsi1sk: `${apiKey.createdAt}#${apiKey.id}`,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
  invalidateCache();
  return { apiKey, key };
}

/** Every key of the app, revoked ones included, oldest first. */
export async function listApiKeys(rt: Runtime, appId: string): Promise<ApiKey[]> {
  const items = await queryAll(rt.dynamo.doc, {
    TableName: rt.tables.entities,
    IndexName: 'gsi1',
    KeyConditionExpression: 'gsi1pk = :pk',
    ExpressionAttributeValues: { ':pk': listPk(appId) },
  });
  return items.map(toApiKey);
}

/** Finds the stored item (by its hash key) of key `id` of this app. */
async function findKeyPk(rt: Runtime, appId: string, id: string): Promise<string | undefined> {
  const pages = queryPages(rt.dynamo.doc, {
    TableName: rt.tables.entities,
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

/** Revokes key `id` of the app; revoking again returns the same revoked key. */
export async function revokeApiKey(
  rt: Runtime,
  appId: string,
  id: string,
): Promise<ApiKey | undefined> {
  const pk = await findKeyPk(rt, appId, id);
  if (!pk) return undefined;
  try {
    const r = await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: { pk, sk: 'APIKEY' },
        UpdateExpression: 'SET revokedAt = :now',
        ConditionExpression:
          'attribute_exists(pk) AND (attribute_not_exists(revokedAt) OR attribute_type(revokedAt, :nullType))',
        ExpressionAttributeValues: { ':now': new Date().toISOString(), ':nullType': 'NULL' },
        ReturnValues: 'ALL_NEW',
      }),
    );
    return toApiKey(r.Attributes ?? {});
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    const r = await rt.dynamo.doc.send(
      new GetCommand({
        TableName: rt.tables.entities,
        Key: { pk, sk: 'APIKEY' },
        ConsistentRead: true,
      }),
    );
    if (!r.Item) throw new AppError('SVC_NOT_FOUND', 'Unknown API key');
    return toApiKey(r.Item);
  } finally {
    invalidateCache();
  }
}

/** The stored key for a presented bearer value (revoked keys included; the caller decides). */
export function getApiKeyByValue(rt: Runtime, key: string): Promise<ApiKey | undefined> {
  if (!patterns.apiKey.test(key)) return Promise.resolve(undefined);
  const hash = sha256hex(key);
  return cached(rt, `apikey:${hash}`, async () => {
    const r = await rt.dynamo.doc.send(
      new GetCommand({
        TableName: rt.tables.entities,
        Key: { pk: `APIKEY#${hash}`, sk: 'APIKEY' },
        ConsistentRead: true,
      }),
    );
    return r.Item ? toApiKey(r.Item) : undefined;
  });
}
