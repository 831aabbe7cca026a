import {
  DeleteCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { ulid } from 'ulid';
import type { TableNames } from '../../../infra/definitions/tables.js';
import type { TestEventObservation } from '../../domain/checklist.js';
import {
  INBOX_SLOTS,
  INBOX_UNSIGNED_SLOTS,
  type ChecklistRecords,
  type ChecklistStore,
  type InboxDelivery,
  type TestEventKind,
} from '../../domain/observations.js';
import { isConditionFailure } from '../dynamo.js';
import { queryAll } from '../query.js';

/**
 * What the checklist and the sandbox tools keep about an app, in the `entities` table:
 * - under pk `APP#{appId}`, every item's sk starting `CHECKLIST#` (one query reads them all):
 *   the last test event of each kind (`CHECKLIST#OBS#signed`, `CHECKLIST#OBS#bad_signature`),
 *   attestations (`CHECKLIST#ATTEST#{itemId}#{ulid}`, one immutable item per attestation) and
 *   the go-live claim (`CHECKLIST#GOLIVE`, put only if absent, so an app goes live once);
 * - the webhook inbox, under pk `APP#{appId}#INBOX`: the last `INBOX_SLOTS` signed deliveries
 *   (sk `SLOT#{nnn}`, by sequence number) and the last `INBOX_UNSIGNED_SLOTS` unsigned ones
 *   (sk `SLOT#U{nn}`, by their own count `useq`); the next sequence number in sk `SEQ`. A
 *   delivery takes the next number(s) and overwrites the slot it maps to, so an inbox never
 *   holds more than `INBOX_SLOTS + INBOX_UNSIGNED_SLOTS` items.
 */
export interface StoreDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities'>;
}

const PREFIX = 'CHECKLIST#';
const ATTEST_PREFIX = `${PREFIX}ATTEST#`;
const GOLIVE_SK = `${PREFIX}GOLIVE`;
const observationSk = (kind: TestEventKind) => `${PREFIX}OBS#${kind}`;
const appPk = (appId: string) => `APP#${appId}`;
const inboxPk = (appId: string) => `APP#${appId}#INBOX`;
const slotSk = (seq: number) => `SLOT#${String(seq % INBOX_SLOTS).padStart(3, '0')}`;
const unsignedSlotSk = (useq: number) =>
  `SLOT#U${String(useq % INBOX_UNSIGNED_SLOTS).padStart(2, '0')}`;

/** Takes the next sequence number (and, for an unsigned delivery, its own count): its slot. */
async function nextInboxSlot(
  doc: DynamoDBDocumentClient,
  TableName: string,
  appId: string,
  signed: boolean,
): Promise<{ seq: number; sk: string }> {
  const counter = await doc.send(
    new UpdateCommand({
      TableName,
      Key: { pk: inboxPk(appId), sk: 'SEQ' },
      UpdateExpression: signed ? 'ADD #seq :one' : 'ADD #seq :one, #useq :one',
      ExpressionAttributeNames: { '#seq': 'seq', ...(signed ? {} : { '#useq': 'useq' }) },
      ExpressionAttributeValues: { ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  const seq = Number(counter.Attributes?.seq);
  return { seq, sk: signed ? slotSk(seq) : unsignedSlotSk(Number(counter.Attributes?.useq)) };
}

function toTestEventObservation(
  item: Record<string, unknown> | undefined,
): TestEventObservation | undefined {
  if (!item) return undefined;
  return {
    at: String(item.at),
    url: String(item.url),
    type: String(item.type),
    status: typeof item.status === 'number' ? item.status : null,
    errorClass: typeof item.errorClass === 'string' ? item.errorClass : undefined,
    durationMs: Number(item.durationMs ?? 0),
  };
}

export function dynamoChecklistStore(deps: StoreDeps): ChecklistStore {
  const doc = deps.dynamo.doc;
  const TableName = deps.tables.entities;

  return {
    async putTestEvent(appId, kind, o) {
      const { errorClass, ...rest } = o;
      await doc.send(
        new PutCommand({
          TableName,
          Item: {
            pk: appPk(appId),
            sk: observationSk(kind),
            kind,
            ...rest,
            ...(errorClass === undefined ? {} : { errorClass }),
          },
        }),
      );
    },

    async records(appId): Promise<ChecklistRecords> {
      const items = await queryAll(doc, {
        TableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': appPk(appId), ':prefix': PREFIX },
        ConsistentRead: true,
      });
      const bySk = new Map(items.map((i) => [String(i.sk), i]));
      // Sort keys end in a ULID: in key order, a later attestation of an item comes last.
      const attestations = [...bySk]
        .filter(([sk]) => sk.startsWith(ATTEST_PREFIX))
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([, i]) => ({
          itemId: String(i.itemId),
          by: String(i.by),
          note: String(i.note),
          at: String(i.at),
        }));
      return {
        testEvents: {
          signed: toTestEventObservation(bySk.get(observationSk('signed'))),
          bad_signature: toTestEventObservation(bySk.get(observationSk('bad_signature'))),
        },
        attestations,
      };
    },

    async putAttestation(appId, itemId, a, atMs) {
      await doc.send(
        new PutCommand({
          TableName,
          Item: {
            pk: appPk(appId),
            sk: `${ATTEST_PREFIX}${itemId}#${ulid(atMs)}`,
            itemId,
            by: a.by,
            note: a.note,
            at: a.at,
          },
          ConditionExpression: 'attribute_not_exists(pk)',
        }),
      );
    },

    async claimGoLive(appId, g) {
      try {
        await doc.send(
          new PutCommand({
            TableName,
            Item: { pk: appPk(appId), sk: GOLIVE_SK, ...g },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        );
        return true;
      } catch (err) {
        if (isConditionFailure(err)) return false;
        throw err;
      }
    },

    async completeGoLive(appId, g) {
      await doc.send(
        new PutCommand({ TableName, Item: { pk: appPk(appId), sk: GOLIVE_SK, ...g } }),
      );
    },

    async releaseGoLive(appId) {
      await doc.send(
        new DeleteCommand({
          TableName,
          Key: { pk: appPk(appId), sk: GOLIVE_SK },
          ConditionExpression: 'attribute_not_exists(liveAppId)',
        }),
      );
    },

    async putInboxDelivery(appId, d) {
      const { seq, sk } = await nextInboxSlot(doc, TableName, appId, d.signatureValid);
      const delivery: InboxDelivery = { seq, ...d };
      await doc.send(new PutCommand({ TableName, Item: { pk: inboxPk(appId), sk, ...delivery } }));
      return delivery;
    },

    async inbox(appId) {
      const items = await queryAll(doc, {
        TableName,
        KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
        ExpressionAttributeValues: { ':pk': inboxPk(appId), ':prefix': 'SLOT#' },
        ConsistentRead: true,
      });
      return items.map((i): InboxDelivery => ({
        seq: Number(i.seq),
        receivedAt: String(i.receivedAt),
        headers: (i.headers ?? {}) as Record<string, string>,
        body: String(i.body ?? ''),
        signatureValid: i.signatureValid === true,
      }));
    },
  };
}
