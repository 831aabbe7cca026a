import { DeleteCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { ulid } from 'ulid';
import { getDispatch, listDispatchesByApp } from '../ledger/queries.js';
import type { Runtime } from '../runtime.js';
import { isConditionFailure } from '../storage/dynamo.js';
import { listApiKeys } from './apiKeys.js';
import {
  POSTBACK_EVENTS,
  type Attestation,
  type ChecklistSnapshot,
  type PostbackEvent,
  type PostbackObservation,
} from './checklist.js';
import { listNotices } from './notices.js';
import {
  CHECKLIST_SK_PREFIX,
  checklistItems,
  observationSk,
  toTestEventObservation,
} from './observations.js';
import type { App } from './types.js';

/**
 * Loads the snapshot the checklist is evaluated from (checklist.ts is the pure rules), and keeps
 * what the checklist itself writes, all under pk `APP#{appId}` in the `entities` table:
 * attestations (sk `CHECKLIST#ATTEST#{itemId}#{ulid}`, one immutable item per attestation, the
 * latest shown) and the go-live claim (sk `CHECKLIST#GOLIVE`, put only if absent, so an app
 * goes live once).
 */

/** Dispatches read from the ledger, newest first: the checklist looks at recent ones only. */
export const RECENT_DISPATCHES = 300;
/** Dispatches per postback-requiring event whose postbacks are read. */
export const DISPATCHES_PER_EVENT = 5;

const appPk = (appId: string) => `APP#${appId}`;
const ATTEST_PREFIX = `${CHECKLIST_SK_PREFIX}ATTEST#`;
const GOLIVE_SK = `${CHECKLIST_SK_PREFIX}GOLIVE`;

/** What the ledger says about the app's recent dispatches. */
async function ledgerFacts(
  rt: Runtime,
  appId: string,
): Promise<Pick<ChecklistSnapshot, 'postbacks' | 'delivered'>> {
  const page = await listDispatchesByApp(rt, appId, { order: 'desc', limit: RECENT_DISPATCHES });
  const postbacks = Object.fromEntries(
    await Promise.all(
      POSTBACK_EVENTS.map(async (event) => {
        const recent = page.items.filter((d) => d.event === event).slice(0, DISPATCHES_PER_EVENT);
        const seen = await Promise.all(
          recent.map(async (d): Promise<PostbackObservation> => {
            const full = await getDispatch(rt, d.dispatchId);
            return {
              dispatchId: d.dispatchId,
              createdAt: d.createdAt,
              postbackDueAt: d.postbackDueAt,
              complianceFlag: full?.complianceFlag ?? d.complianceFlag,
              postbacks: (full?.postbacks ?? []).map((p) => ({
                receivedAt: p.receivedAt,
                status: p.status,
              })),
            };
          }),
        );
        return [event, seen] as const;
      }),
    ),
  ) as Record<PostbackEvent, PostbackObservation[]>;
  const d = page.items.find((x) => x.deliveryStatus === 'delivered' && x.deliveredAt);
  return {
    postbacks,
    delivered: d ? { dispatchId: d.dispatchId, deliveredAt: d.deliveredAt! } : undefined,
  };
}

/** The latest attestation of each item. */
function attestationsOf(items: Map<string, Record<string, unknown>>): Record<string, Attestation> {
  const out: Record<string, Attestation> = {};
  // Sort keys end in a ULID: in key order, a later attestation of an item comes last.
  for (const [sk, i] of [...items].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!sk.startsWith(ATTEST_PREFIX)) continue;
    out[String(i.itemId)] = { by: String(i.by), note: String(i.note), at: String(i.at) };
  }
  return out;
}

/** Everything the checklist of this app is evaluated from. */
export async function loadChecklistSnapshot(rt: Runtime, app: App): Promise<ChecklistSnapshot> {
  const [notices, apiKeys, items, ledger] = await Promise.all([
    listNotices(rt, app.appId),
    listApiKeys(rt, app.appId),
    checklistItems(rt, app.appId),
    ledgerFacts(rt, app.appId),
  ]);
  return {
    app,
    notices,
    apiKeys,
    testEvents: {
      signed: toTestEventObservation(items.get(observationSk('signed'))),
      badSignature: toTestEventObservation(items.get(observationSk('bad_signature'))),
    },
    ...ledger,
    attestations: attestationsOf(items),
  };
}

/** Records an attestation (the caller has checked that the item may be attested). */
export async function recordAttestation(
  rt: Runtime,
  appId: string,
  itemId: string,
  a: { by: string; note: string },
  now = new Date(),
): Promise<Attestation> {
  const at = now.toISOString();
  await rt.dynamo.doc.send(
    new PutCommand({
      TableName: rt.tables.entities,
      Item: {
        pk: appPk(appId),
        sk: `${ATTEST_PREFIX}${itemId}#${ulid(now.getTime())}`,
        itemId,
        by: a.by,
        note: a.note,
        at,
      },
      ConditionExpression: 'attribute_not_exists(pk)',
    }),
  );
  return { by: a.by, note: a.note, at };
}

/**
 * Claims the app's one go-live: true when this call holds the claim, false when the app went
 * (or is going) live already.
 */
export async function claimGoLive(
  rt: Runtime,
  appId: string,
  g: { by: string; at: string },
): Promise<boolean> {
  try {
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.entities,
        Item: { pk: appPk(appId), sk: GOLIVE_SK, ...g },
        ConditionExpression: 'attribute_not_exists(pk)',
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** Completes the claim with the live twin's id. */
export async function completeGoLive(
  rt: Runtime,
  appId: string,
  g: { by: string; at: string; liveAppId: string },
): Promise<void> {
  await rt.dynamo.doc.send(
    new PutCommand({
      TableName: rt.tables.entities,
      Item: { pk: appPk(appId), sk: GOLIVE_SK, ...g },
    }),
  );
}

/** Gives a claim back after a go-live that failed before creating anything lasting. */
export async function releaseGoLive(rt: Runtime, appId: string): Promise<void> {
  await rt.dynamo.doc.send(
    new DeleteCommand({
      TableName: rt.tables.entities,
      Key: { pk: appPk(appId), sk: GOLIVE_SK },
      ConditionExpression: 'attribute_not_exists(liveAppId)',
    }),
  );
}
