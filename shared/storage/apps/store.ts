import {
  GetCommand,
  PutCommand,
  QueryCommand,
  ScanCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import type { AppStore, AppSummary, SealedBoxes, StoredApp } from '../../domain/apps.js';
import { AppError } from '../../errors.js';
import type { Environment } from '../../domain/types.js';
import { isConditionFailure, updateIfHolds } from '../dynamo.js';

/**
 * Apps in the `entities` table: pk `APP#{appId}`, sk `APP`; gsi1 finds an app by site key
 * (`SITEKEY#{siteKey}`), gsi2 by the SHA-256 of its secret key (`SECRET#{hash}`), both with sk
 * `APP`.
 */
export interface StoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities'>;
}

const appPk = (appId: string) => `APP#${appId}`;
const STORAGE_ATTRS = ['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk'];

function stored(item: Record<string, unknown>): StoredApp {
  const out = { ...item };
  for (const k of STORAGE_ATTRS) delete out[k];
  return out as StoredApp;
}

/** Scan pages read for one page of the list of apps; each reads at most 1 MB. */
const SCAN_PAGES = 10;

const encode = (k: Record<string, unknown> | undefined) =>
  k ? Buffer.from(JSON.stringify(k)).toString('base64url') : null;

function decode(c: string | undefined): Record<string, unknown> | undefined {
  if (!c) return undefined;
  try {
    const v: unknown = JSON.parse(Buffer.from(c, 'base64url').toString('utf8'));
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch {
    // fall through
  }
  throw new AppError('SVC_VALIDATION_FAILED', 'The cursor is not valid');
}

export function dynamoAppStore(deps: StoreDeps): AppStore {
  const doc = deps.dynamo.doc;
  const TableName = deps.tables.entities;
  const key = (appId: string) => ({ pk: appPk(appId), sk: 'APP' });

  /** An update that returns the app after it, or undefined when its condition failed. */
  async function update(
    input: Omit<ConstructorParameters<typeof UpdateCommand>[0], 'TableName' | 'ReturnValues'>,
  ): Promise<StoredApp | undefined> {
    try {
      const r = await doc.send(new UpdateCommand({ TableName, ...input, ReturnValues: 'ALL_NEW' }));
      return stored(r.Attributes ?? {});
    } catch (err) {
      if (isConditionFailure(err)) return undefined;
      throw err;
    }
  }

  /** The app id an index entry names (the caller reads the item itself: indexes lag a little). */
  async function idByIndex(index: 'gsi1' | 'gsi2', pk: string): Promise<string | undefined> {
    const r = await doc.send(
      new QueryCommand({
        TableName,
        IndexName: index,
        KeyConditionExpression: '#pk = :pk AND #sk = :sk',
        ExpressionAttributeNames: { '#pk': `${index}pk`, '#sk': `${index}sk` },
        ExpressionAttributeValues: { ':pk': pk, ':sk': 'APP' },
        ProjectionExpression: 'appId',
      }),
    );
    return r.Items?.[0]?.appId as string | undefined;
  }

  return {
    async create(app, secretHash) {
      await doc.send(
        new PutCommand({
          TableName,
          Item: {
            ...app,
            ...key(app.appId),
            gsi1pk: `SITEKEY#${app.siteKey}`,
            gsi1sk: 'APP',
            gsi2pk: `SECRET#${secretHash}`,
            gsi2sk: 'APP',
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    async load(appId) {
      const r = await doc.send(
        new GetCommand({ TableName, Key: key(appId), ConsistentRead: true }),
      );
      return r.Item && stored(r.Item);
    },

    idBySiteKey: (siteKey) => idByIndex('gsi1', `SITEKEY#${siteKey}`),
    idBySecretHash: (hash) => idByIndex('gsi2', `SECRET#${hash}`),

    update(appId, patch, at, environment: Environment) {
      const names: Record<string, string> = { '#updatedAt': 'updatedAt', '#env': 'environment' };
      const values: Record<string, unknown> = { ':updatedAt': at, ':env': environment };
      const sets = ['#updatedAt = :updatedAt'];
      const removes: string[] = [];
      for (const [k, v] of Object.entries(patch)) {
        if (v === undefined) continue;
        names[`#${k}`] = k;
        if (v === null) {
          removes.push(`#${k}`);
        } else {
          values[`:${k}`] = v;
          sets.push(`#${k} = :${k}`);
        }
      }
      return update({
        Key: key(appId),
        UpdateExpression: `SET ${sets.join(', ')}${removes.length ? ` REMOVE ${removes.join(', ')}` : ''}`,
        ConditionExpression: 'attribute_exists(pk) AND #env = :env',
        ExpressionAttributeNames: names,
        ExpressionAttributeValues: values,
      });
    },

    rotateSecret(appId, secretKeyEnc, secretHash, at) {
      return update({
        Key: key(appId),
        UpdateExpression:
          'SET secretKeyEnc = :enc, gsi2pk = :g, secretVersion = secretVersion + :one, updatedAt = :now',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeValues: {
          ':enc': secretKeyEnc,
          ':g': `SECRET#${secretHash}`,
          ':one': 1,
          ':now': at,
        },
      });
    },

    recordGoLive(appId, g) {
      const [twinAttr, twinId] = Object.entries(g.twin)[0] as [string, string];
      return update({
        Key: key(appId),
        UpdateExpression: 'SET goLiveAt = :at, goLiveBy = :by, #twin = :twin, updatedAt = :at',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#twin': twinAttr },
        ExpressionAttributeValues: { ':at': g.at, ':by': g.by, ':twin': twinId },
      });
    },

    async markWidgetVerified(appId, origin, at, before) {
      try {
        await doc.send(
          new UpdateCommand({
            TableName,
            Key: key(appId),
            UpdateExpression: 'SET widgetVerifiedAt = :at, widgetVerifiedOrigin = :origin',
            ConditionExpression:
              'attribute_exists(pk) AND (attribute_not_exists(widgetVerifiedAt) OR attribute_type(widgetVerifiedAt, :nullType) OR widgetVerifiedAt < :before)',
            ExpressionAttributeValues: {
              ':at': at,
              ':origin': origin,
              ':nullType': 'NULL',
              ':before': before,
            },
          }),
        );
        return true;
      } catch (err) {
        if (isConditionFailure(err)) return false;
        throw err;
      }
    },

    /**
     * No index lists apps, so this scans for app items (sk `APP`), projecting only what the
     * list shows (never a sealed box), up to `want` apps or SCAN_PAGES pages. Its cost grows
     * with the whole table; an index of apps would make it a query.
     */
    async page(cursor, want) {
      const apps: AppSummary[] = [];
      let start = decode(cursor);
      for (let page = 0; page < SCAN_PAGES && apps.length < want; page++) {
        const r = await doc.send(
          new ScanCommand({
            TableName,
            FilterExpression: 'sk = :app',
            ProjectionExpression: 'appId, #name, environment, createdAt, widgetVerifiedAt',
            ExpressionAttributeNames: { '#name': 'name' },
            ExpressionAttributeValues: { ':app': 'APP' },
            ExclusiveStartKey: start,
          }),
        );
        for (const i of r.Items ?? [])
          apps.push({
            appId: String(i.appId),
            name: String(i.name),
            environment: String(i.environment),
            createdAt: String(i.createdAt),
            widgetVerifiedAt: typeof i.widgetVerifiedAt === 'string' ? i.widgetVerifiedAt : null,
          });
        start = r.LastEvaluatedKey;
        if (!start) break;
      }
      return { apps, next: encode(start) };
    },

    async *sealedBoxes() {
      let start: Record<string, unknown> | undefined;
      do {
        const page = await doc.send(
          new ScanCommand({
            TableName,
            FilterExpression:
              'sk = :app AND (attribute_exists(secretKeyEnc) OR attribute_exists(referenceKeyEnc))',
            ExpressionAttributeValues: { ':app': 'APP' },
            ProjectionExpression: 'pk, sk, appId, secretKeyEnc, referenceKeyEnc',
            ExclusiveStartKey: start,
          }),
        );
        yield (page.Items ?? []).map((i) => stored(i) as unknown as SealedBoxes);
        start = page.LastEvaluatedKey;
      } while (start);
    },

    replaceBox(appId, attr, old, next) {
      return updateIfHolds(doc, {
        TableName,
        Key: key(appId),
        UpdateExpression: 'SET #box = :new',
        ConditionExpression: '#box = :old',
        ExpressionAttributeNames: { '#box': attr },
        ExpressionAttributeValues: { ':new': next, ':old': old },
      });
    },
  };
}
