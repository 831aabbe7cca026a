import type { CacheOwner } from './cache.js';
import type { TestEventObservation } from './checklist.js';

/**
 * What the sandbox tools observed about an app (docs/api.md, Sandbox tools): the outcome of the
 * last test event of each kind, and the webhook inbox (the last `INBOX_SLOTS` deliveries). The
 * checklist's own records (attestations, the go-live claim) are kept by the same store.
 */

export type TestEventKind = 'signed' | 'bad_signature';

/** An attestation of a checklist item as stored. */
export interface StoredAttestation {
  itemId: string;
  by: string;
  note: string;
  at: string;
}

/** What the checklist of an app has recorded. */
export interface ChecklistRecords {
  testEvents: Partial<Record<TestEventKind, TestEventObservation | undefined>>;
  /** Every attestation, each item's in the order they were made. */
  attestations: StoredAttestation[];
}

/** Where the checklist and the sandbox tools keep what they record (shared/storage/checklist/). */
export interface ChecklistStore {
  /** Keeps the outcome of a test event (the last of each kind counts). */
  putTestEvent(appId: string, kind: TestEventKind, o: TestEventObservation): Promise<void>;
  records(appId: string): Promise<ChecklistRecords>;
  /** A new immutable attestation, made at `atMs`. */
  putAttestation(
    appId: string,
    itemId: string,
    a: { by: string; note: string; at: string },
    atMs: number,
  ): Promise<void>;
  /** Takes the app's one go-live claim; false when it is held already. */
  claimGoLive(appId: string, g: { by: string; at: string }): Promise<boolean>;
  /** Completes the claim with the live twin's id. */
  completeGoLive(appId: string, g: { by: string; at: string; liveAppId: string }): Promise<void>;
  /** Gives an incomplete claim back (refused once it names a live twin). */
  releaseGoLive(appId: string): Promise<void>;
  /**
   * Stores one delivery under the next sequence number, in the app's ring of `INBOX_SLOTS`
   * signed deliveries or of `INBOX_UNSIGNED_SLOTS` unsigned ones (the oldest overwritten).
   */
  putInboxDelivery(appId: string, d: Omit<InboxDelivery, 'seq'>): Promise<InboxDelivery>;
  /** The inbox's deliveries, in no order. */
  inbox(appId: string): Promise<InboxDelivery[]>;
}

/** What the functions here use; a Runtime is one. */
export interface ChecklistDeps extends CacheOwner {
  checklist: ChecklistStore;
}

/** Keeps the outcome of a test event (the last of each kind counts). */
export function recordTestEvent(
  rt: ChecklistDeps,
  appId: string,
  kind: TestEventKind,
  o: TestEventObservation,
): Promise<void> {
  return rt.checklist.putTestEvent(appId, kind, o);
}

/** The last test event of each kind. */
export async function testEventsOf(
  rt: ChecklistDeps,
  appId: string,
): Promise<ChecklistRecords['testEvents']> {
  return (await rt.checklist.records(appId)).testEvents;
}

// ---------------------------------------------------------------------------------------------
// The webhook inbox
// ---------------------------------------------------------------------------------------------

/** Deliveries whose signature verifies that an app's inbox keeps (the newest). */
export const INBOX_SLOTS = 100;
/**
 * Deliveries that do not verify that an app's inbox keeps (the newest, in a ring of their own):
 * anyone can post them, so they never push signed deliveries out.
 */
export const INBOX_UNSIGNED_SLOTS = 10;
/** Largest body the inbox stores; webhook bodies are far smaller. */
export const INBOX_MAX_BODY_BYTES = 16 * 1024;
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

/** Stores one delivery in the app's ring; the caller has checked that the app is a sandbox app. */
export function storeInboxDelivery(
  rt: ChecklistDeps,
  appId: string,
  d: Omit<InboxDelivery, 'seq'>,
): Promise<InboxDelivery> {
  return rt.checklist.putInboxDelivery(appId, d);
}

/** The inbox, newest first (at most INBOX_SLOTS + INBOX_UNSIGNED_SLOTS, `limit` if smaller). */
export async function listInbox(
  rt: ChecklistDeps,
  appId: string,
  limit = INBOX_SLOTS + INBOX_UNSIGNED_SLOTS,
) {
  return (await rt.checklist.inbox(appId)).sort((a, b) => b.seq - a.seq).slice(0, limit);
}
