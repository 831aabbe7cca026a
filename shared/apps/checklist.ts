import type { WithLedger } from '../ledger/port.js';
import { getDispatch, listDispatchesByApp } from '../ledger/queries.js';
import { listApiKeys, type ApiKeysDeps } from '../domain/apiKeys.js';
import {
  POSTBACK_EVENTS,
  type Attestation,
  type ChecklistSnapshot,
  type PostbackEvent,
  type PostbackObservation,
} from '../domain/checklist.js';
import { listNotices, type NoticesDeps } from '../domain/notices.js';
import type { ChecklistStore, StoredAttestation } from '../domain/observations.js';
import type { App } from '../domain/types.js';

/**
 * Loads the snapshot the checklist is evaluated from (checklist.ts is the pure rules), and keeps
 * what the checklist itself writes through its `checklist` store: attestations (one
 * immutable record per attestation, the latest shown) and the go-live claim (taken once, so an
 * app goes live once).
 */

/**
 * What the snapshot is loaded from: the ledger, the notice and API-key stores, and the
 * checklist's own store (all the checklist's writes use only that); a Runtime is one.
 */
export interface ChecklistLoadDeps extends WithLedger, NoticesDeps, ApiKeysDeps {
  checklist: ChecklistStore;
}

/** What the checklist's own writes use: its store. */
export type ChecklistWriteDeps = Pick<ChecklistLoadDeps, 'checklist'>;

/** Dispatches read from the ledger, newest first: the checklist looks at recent ones only. */
export const RECENT_DISPATCHES = 300;
/** Dispatches per postback-requiring event whose postbacks are read. */
export const DISPATCHES_PER_EVENT = 5;

/** What the ledger says about the app's recent dispatches. */
async function ledgerFacts(
  rt: WithLedger,
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
function attestationsOf(all: StoredAttestation[]): Record<string, Attestation> {
  const out: Record<string, Attestation> = {};
  for (const i of all) out[i.itemId] = { by: i.by, note: i.note, at: i.at };
  return out;
}

/** Everything the checklist of this app is evaluated from. */
export async function loadChecklistSnapshot(
  rt: ChecklistLoadDeps,
  app: App,
): Promise<ChecklistSnapshot> {
  const [notices, apiKeys, items, ledger] = await Promise.all([
    listNotices(rt, app.appId),
    listApiKeys(rt, app.appId),
    rt.checklist.records(app.appId),
    ledgerFacts(rt, app.appId),
  ]);
  return {
    app,
    notices,
    apiKeys,
    testEvents: {
      signed: items.testEvents.signed,
      badSignature: items.testEvents.bad_signature,
    },
    ...ledger,
    attestations: attestationsOf(items.attestations),
  };
}

/** Records an attestation (the caller has checked that the item may be attested). */
export async function recordAttestation(
  rt: ChecklistWriteDeps,
  appId: string,
  itemId: string,
  a: { by: string; note: string },
  now = new Date(),
): Promise<Attestation> {
  const at = now.toISOString();
  await rt.checklist.putAttestation(appId, itemId, { by: a.by, note: a.note, at }, now.getTime());
  return { by: a.by, note: a.note, at };
}

/**
 * Claims the app's one go-live: true when this call holds the claim, false when the app went
 * (or is going) live already.
 */
export function claimGoLive(
  rt: ChecklistWriteDeps,
  appId: string,
  g: { by: string; at: string },
): Promise<boolean> {
  return rt.checklist.claimGoLive(appId, g);
}

/** Completes the claim with the live twin's id. */
export function completeGoLive(
  rt: ChecklistWriteDeps,
  appId: string,
  g: { by: string; at: string; liveAppId: string },
): Promise<void> {
  return rt.checklist.completeGoLive(appId, g);
}

/** Gives a claim back after a go-live that failed before creating anything lasting. */
export function releaseGoLive(rt: ChecklistWriteDeps, appId: string): Promise<void> {
  return rt.checklist.releaseGoLive(appId);
}
