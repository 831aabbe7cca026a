import {
  GetCommand,
  TransactWriteCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import type { NoticeStore, NoticeWrite } from '../../domain/notices.js';
import type { NoticeVersion } from '../../domain/types.js';
import { cancellationReasons } from '../dynamo.js';
import { queryAll } from '../query.js';

/**
 * Notices in the `entities` table, all under pk `APP#{appId}`:
 * - `NOTICE#{noticeId}`: the head, a copy of the latest version (listing reads only heads);
 * - `NOTICEV#{noticeId}#{version:06}`: every version, immutable;
 * - trigger claims → noticeId, which keep a trigger key unique per app and region
 *   (docs/api.md, Regions): `TRIGGER#{triggerKey}` for the notice without regions (at most
 *   one), `TRIGGER#{triggerKey}#{region}` for each region of a notice with regions (so no
 *   region has two notices of one trigger key).
 * A change writes the new version, the head and the claims it takes or gives up in one
 * transaction, conditional on the head's version and on each claim being free, so concurrent
 * changes never lose a version and never share a region.
 */
export interface StoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities'>;
}

const pk = (appId: string) => `APP#${appId}`;
const headSk = (noticeId: string) => `NOTICE#${noticeId}`;
const versionSk = (noticeId: string, v: number) =>
  `NOTICEV#${noticeId}#${String(v).padStart(6, '0')}`;
const triggerSk = (triggerKey: string, region?: string) =>
  region === undefined ? `TRIGGER#${triggerKey}` : `TRIGGER#${triggerKey}#${region}`;

/** The trigger claims a notice holds: one per region, or the region-less one. */
export function claimsOf(n: Pick<NoticeVersion, 'triggerKey' | 'regions'>): string[] {
  return n.regions?.length
    ? n.regions.map((r) => triggerSk(n.triggerKey, r))
    : [triggerSk(n.triggerKey)];
}

function toNotice(item: Record<string, unknown>): NoticeVersion {
  const { pk: _pk, sk: _sk, ...n } = item;
  return n as unknown as NoticeVersion;
}

/**
 * What a cancelled transaction says: the indexes of the failed conditions (none: cancelled only
 * because another transaction touched one of its items), or undefined for any other error.
 */
function cancelled(err: unknown): { failed: Set<number>; contention: boolean } | undefined {
  const c = cancellationReasons(err);
  return c && { failed: c.failed, contention: c.contention };
}

/** The puts that take trigger claims, each only if free. */
const claimPuts = (TableName: string, appId: string, noticeId: string, sks: string[]) =>
  sks.map((sk) => ({
    Put: {
      TableName,
      Item: { pk: pk(appId), sk, noticeId },
      ConditionExpression: 'attribute_not_exists(pk)',
    },
  }));

export function dynamoNoticeStore(deps: StoreDeps): NoticeStore {
  const doc = deps.dynamo.doc;
  const TableName = deps.tables.entities;

  return {
    async create(notice): Promise<NoticeWrite> {
      const appId = notice.appId;
      try {
        await doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                ConditionCheck: {
                  TableName,
                  Key: { pk: pk(appId), sk: 'APP' },
                  ConditionExpression: 'attribute_exists(pk)',
                },
              },
              {
                Put: {
                  TableName,
                  Item: { ...notice, pk: pk(appId), sk: headSk(notice.noticeId) },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
              {
                Put: {
                  TableName,
                  Item: { ...notice, pk: pk(appId), sk: versionSk(notice.noticeId, 1) },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
              ...claimPuts(TableName, appId, notice.noticeId, claimsOf(notice)),
            ],
          }),
        );
        return 'written';
      } catch (err) {
        const c = cancelled(err);
        if (c?.failed.has(0)) return 'unknown_app';
        if (c && [...c.failed].some((i) => i >= 3)) return 'claim_taken';
        if (c && c.failed.size === 0 && c.contention) return 'contended';
        throw err;
      }
    },

    async replace(head, next): Promise<NoticeWrite> {
      const { appId, noticeId } = next;
      const held = claimsOf(head);
      const wanted = claimsOf(next);
      const taken = wanted.filter((sk) => !held.includes(sk));
      const given = held.filter((sk) => !wanted.includes(sk));
      try {
        await doc.send(
          new TransactWriteCommand({
            TransactItems: [
              {
                Put: {
                  TableName,
                  Item: { ...next, pk: pk(appId), sk: headSk(noticeId) },
                  ConditionExpression: 'version = :prev',
                  ExpressionAttributeValues: { ':prev': head.version },
                },
              },
              {
                Put: {
                  TableName,
                  Item: { ...next, pk: pk(appId), sk: versionSk(noticeId, next.version) },
                  ConditionExpression: 'attribute_not_exists(pk)',
                },
              },
              ...claimPuts(TableName, appId, noticeId, taken),
              ...given.map((sk) => ({
                Delete: {
                  TableName,
                  Key: { pk: pk(appId), sk },
                  ConditionExpression: 'noticeId = :id',
                  ExpressionAttributeValues: { ':id': noticeId },
                },
              })),
            ],
          }),
        );
        return 'written';
      } catch (err) {
        const c = cancelled(err);
        const failed = c?.failed.size ? c.failed : undefined;
        // The head moved: the caller reads it again. Otherwise a claim another notice holds.
        if (failed && !failed.has(0) && [...failed].some((i) => i >= 2 && i < 2 + taken.length))
          return 'claim_taken';
        if (failed) return 'moved';
        if (c?.contention) return 'contended';
        throw err;
      }
    },

    async get(appId, noticeId, version) {
      const r = await doc.send(
        new GetCommand({
          TableName,
          Key: {
            pk: pk(appId),
            sk: version === undefined ? headSk(noticeId) : versionSk(noticeId, version),
          },
          ConsistentRead: true,
        }),
      );
      return r.Item && toNotice(r.Item);
    },

    async list(appId) {
      const items = await queryAll(doc, {
        TableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': pk(appId), ':prefix': 'NOTICE#' },
        ConsistentRead: true,
      });
      return items.map(toNotice);
    },

    async triggerHolders(appId, triggerKey) {
      const base = triggerSk(triggerKey);
      // Every claim of this key and no other: trigger keys hold only [a-z0-9_], all after '#',
      // and region codes only characters before '~'.
      const items = await queryAll(doc, {
        TableName,
        KeyConditionExpression: 'pk = :pk AND sk BETWEEN :lo AND :hi',
        ExpressionAttributeValues: { ':pk': pk(appId), ':lo': base, ':hi': `${base}#~` },
        ConsistentRead: true,
      });
      const byNotice = new Map<string, string[]>();
      for (const item of items) {
        const sk = item.sk as string;
        const id = item.noticeId as string;
        const regions = byNotice.get(id) ?? [];
        if (sk.startsWith(`${base}#`)) regions.push(sk.slice(base.length + 1));
        byNotice.set(id, regions);
      }
      return [...byNotice].map(([noticeId, regions]) =>
        regions.length ? { noticeId, regions } : { noticeId },
      );
    },
  };
}
