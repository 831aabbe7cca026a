import { PutCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import type { Runtime } from '../runtime.js';
import { queryAll } from '../storage/query.js';
import type { TestEventObservation } from './checklist.js';

/**
 * What the sandbox tools observed about an app, in the `entities` table (docs/api.md, Sandbox
 * tools):
 *
 * - the outcome of the last test event of each kind: pk `APP#{appId}`, sk
 *   `CHECKLIST#OBS#signed` or `CHECKLIST#OBS#bad_signature` (the checklist store reads every
 *   `CHECKLIST#` item of the app in one query);
 * - the webhook inbox: the last `INBOX_SLOTS` deliveries, a ring under pk
 *   `APP#{appId}#INBOX` (sk `SLOT#{nn}`), the next sequence number in sk `SEQ`. A delivery
 *   takes the next number and overwrites the slot it maps to, so an app's inbox never holds
 *   more than `INBOX_SLOTS` items however much is posted to it.
 */

export type TestEventKind = 'signed' | 'bad_signature';

export const CHECKLIST_SK_PREFIX = 'CHECKLIST#';
export const observationSk = (kind: TestEventKind) => `${CHECKLIST_SK_PREFIX}OBS#${kind}`;

const appPk = (appId: string) => `APP#${appId}`;

/** Keeps the outcome of a test event (the last of each kind counts). */
export async function recordTestEvent(
  rt: Runtime,
  appId: string,
  kind: TestEventKind,
  o: TestEventObservation,
): Promise<void> {
  const { errorClass, ...rest } = o;
  await rt.dynamo.doc.send(
    new PutCommand({
      TableName: rt.tables.entities,
      Item: {
        pk: appPk(appId),
        sk: observationSk(kind),
        kind,
        ...rest,
        ...(errorClass === undefined ? {} : { errorClass }),
      },
    }),
  );
}

/** The app's checklist items (observations, attestations, go-live claim), by sort key. */
export async function checklistItems(
  rt: Runtime,
  appId: string,
): Promise<Map<string, Record<string, unknown>>> {
  const items = await queryAll(rt.dynamo.doc, {
    TableName: rt.tables.entities,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': appPk(appId), ':prefix': CHECKLIST_SK_PREFIX },
    ConsistentRead: true,
  });
  return new Map(items.map((i) => [String(i.sk), i]));
}

export function toTestEventObservation(
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

// ---------------------------------------------------------------------------------------------
// The webhook inbox
// ---------------------------------------------------------------------------------------------

/** Deliveries an app's inbox keeps (the newest). */
export const INBOX_SLOTS = 100;
/** Largest body the inbox stores; webhook bodies are far smaller. */
export const INBOX_MAX_BODY_BYTES = 64 * 1024;
/** Headers kept of each delivery (others, such as proxies' additions, are dropped). */
export const INBOX_HEADERS = [
  'content-type',
  'user-agent',
  'x-svc-dispatch-id',
  'x-svc-event',
  'x-svc-attempt',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'x-svc-test-event',
] as const;

export interface InboxDelivery {
  seq: number;
  receivedAt: string;
  headers: Record<string, string>;
  body: string;
  /** Whether `webhook-signature` matches the body under the app's secret key at receipt. */
  signatureValid: boolean;
}

const inboxPk = (appId: string) => `APP#${appId}#INBOX`;
const slotSk = (seq: number) => `SLOT#${String(seq % INBOX_SLOTS).padStart(3, '0')}`;

/** Stores one delivery in the app's ring; the caller has checked that the app is a sandbox app. */
export async function storeInboxDelivery(
  rt: Runtime,
  appId: string,
  d: Omit<InboxDelivery, 'seq'>,
): Promise<InboxDelivery> {
  const counter = await rt.dynamo.doc.send(
    new UpdateCommand({
      TableName: rt.tables.entities,
      Key: { pk: inboxPk(appId), sk: 'SEQ' },
      UpdateExpression: 'ADD #seq :one',
      ExpressionAttributeNames: { '#seq': 'seq' },
      ExpressionAttributeValues: { ':one': 1 },
      ReturnValues: 'UPDATED_NEW',
    }),
  );
  const seq = Number(counter.Attributes?.seq);
  const delivery: InboxDelivery = { seq, ...d };
  await rt.dynamo.doc.send(
    new PutCommand({
      TableName: rt.tables.entities,
      Item: { pk: inboxPk(appId), sk: slotSk(seq), ...delivery },
    }),
  );
  return delivery;
}

/** The inbox, newest first (at most INBOX_SLOTS, `limit` if smaller). */
export async function listInbox(rt: Runtime, appId: string, limit = INBOX_SLOTS) {
  const items = await queryAll(rt.dynamo.doc, {
    TableName: rt.tables.entities,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :prefix)',
    ExpressionAttributeValues: { ':pk': inboxPk(appId), ':prefix': 'SLOT#' },
    ConsistentRead: true,
  });
  return items
    .map((i): InboxDelivery => ({
      seq: Number(i.seq),
      receivedAt: String(i.receivedAt),
      headers: (i.headers ?? {}) as Record<string, string>,
      body: String(i.body ?? ''),
      signatureValid: i.signatureValid === true,
    }))
    .sort((a, b) => b.seq - a.seq)
    .slice(0, limit);
}
