import { z } from 'zod';
import type { App } from '../types.js';
import type { ConsentRecord, RecordChange, StoredTransaction } from './model.js';
import type { RecordState } from './states.js';

/**
 * Consent events (docs/webhooks.md, Events): one payload on Kafka and on the wire. Pure builders.
 */

export const EVENT_TYPES = [
  'consent.created',
  'consent.granted',
  'consent.withdrawn',
  'consent.expiry.reminder',
  'consent.expired',
  'data.deleted',
  'consent.parental_verification_required',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

const HOUR_MS = 3_600_000;

/** Postback windows (docs/webhooks.md, Events); events not listed need no postback. */
export const POSTBACK_WINDOW_MS: Partial<Record<EventType, number>> = {
  'consent.withdrawn': HOUR_MS,
  'consent.expired': 72 * HOUR_MS,
  'data.deleted': 24 * HOUR_MS,
};

export const POSTBACK_PATH = '/api/v1/server/consent/action';

/** What a purpose is in an event's `data.state` (docs/webhooks.md, Events). */
export const PURPOSE_STATES = ['granted', 'withdrawn', 'erased', 'expired', 'pending'] as const;
export type PurposeState = (typeof PURPOSE_STATES)[number];

/**
 * Each record state as `data.state` shows it: `denied` (never granted, refused, or a pending
 * purpose refused) and `revoked` both read `withdrawn`, the purpose not consented to.
 */
const PURPOSE_STATE: Record<RecordState, PurposeState> = {
  granted: 'granted',
  denied: 'withdrawn',
  revoked: 'withdrawn',
  expired: 'expired',
  erased: 'erased',
  pending: 'pending',
};

/** Every purpose of a transaction and its state (`data.state`). */
export function purposeStates(
  records: readonly Pick<ConsentRecord, 'purpose' | 'state'>[],
): Record<string, PurposeState> {
  return Object.fromEntries(records.map((r) => [r.purpose, PURPOSE_STATE[r.state]]));
}

/**
 * The sequences of a transaction's next events: `last + 1`, `last + 2`, … one per call, in the
 * order the events are built (and published).
 */
export function sequencesAfter(last: number): () => number {
  let n = last;
  return () => ++n;
}

export const consentEventSchema = z.object({
  id: z.string().regex(/^evt_[0-9A-HJKMNP-TV-Z]{26}$/),
  type: z.enum(EVENT_TYPES),
  apiVersion: z.literal('v1'),
  createdAt: z.string(),
  appId: z.string(),
  environment: z.enum(['sandbox', 'live']),
  data: z.object({
    referenceId: z.string(),
    userId: z.string().nullable(),
    consentId: z.string(),
    /**
     * The event's place among its transaction's events: 1 for the first, one more for each
     * (docs/webhooks.md, Ordering).
     */
    sequence: z.number().int().positive(),
    recordIds: z.array(z.string()),
    purposes: z.record(z.string(), z.boolean()),
    /** Every purpose of the transaction after the change. */
    state: z.record(z.string(), z.enum(PURPOSE_STATES)),
    noticeId: z.string().nullable(),
    noticeVersion: z.number().int().nullable(),
    expiresAt: z.string().nullable(),
    /** Why the service itself erased the data (`data.deleted` only): absent for a request. */
    reason: z.enum(['inactivity']).optional(),
    postback: z
      .object({ required: z.literal(true), dueAt: z.string(), url: z.string() })
      .optional(),
  }),
});
export type ConsentEvent = z.infer<typeof consentEventSchema>;

export interface EventContext {
  app: Pick<App, 'appId' | 'environment' | 'slaTimeScale'>;
  /** The transaction after the change. */
  txn: StoredTransaction;
  changes: readonly RecordChange[];
  /** True when this operation created the transaction. */
  created: boolean;
  now: Date;
  /** Base of the postback URL (`{postback_url}`), without a trailing slash. */
  baseUrl: string;
  newId: () => string;
  /** The next sequence of the transaction (`sequencesAfter` its last one), one per event. */
  nextSequence: () => number;
  /** Set when the service erases on its own (inactivity); carried by `data.deleted`. */
  reason?: 'inactivity' | undefined;
}

/** The postback deadline: the window compressed by the app's sandbox time scale. */
export function postbackDueAt(
  type: EventType,
  createdAt: Date,
  slaTimeScale: number,
): string | undefined {
  const w = POSTBACK_WINDOW_MS[type];
  if (w === undefined) return undefined;
  return new Date(createdAt.getTime() + w / Math.max(1, slaTimeScale)).toISOString();
}

function build(
  c: EventContext,
  type: EventType,
  touched: readonly { recordId: string; purpose: string; granted: boolean }[],
): ConsentEvent {
  const dueAt = postbackDueAt(type, c.now, c.app.slaTimeScale);
  return {
    id: c.newId(),
    type,
    apiVersion: 'v1',
    createdAt: c.now.toISOString(),
    appId: c.app.appId,
    environment: c.app.environment,
    data: {
      referenceId: c.txn.referenceId,
      userId: c.txn.userId ?? null,
      consentId: c.txn.transactionId,
      sequence: c.nextSequence(),
      recordIds: touched.map((t) => t.recordId),
      purposes: Object.fromEntries(touched.map((t) => [t.purpose, t.granted])),
      state: purposeStates(c.txn.records),
      noticeId: c.txn.noticeId,
      noticeVersion: c.txn.noticeVersion,
      expiresAt: c.txn.expiresAt,
      ...(type === 'data.deleted' && c.reason ? { reason: c.reason } : {}),
      ...(dueAt
        ? { postback: { required: true as const, dueAt, url: `${c.baseUrl}${POSTBACK_PATH}` } }
        : {}),
    },
  };
}

/**
 * The events of one operation on one transaction: at most one of each type, each listing every
 * record it touched (the table in docs/webhooks.md, Events). A no-op (no changes) emits nothing.
 */
export function planEvents(c: EventContext): ConsentEvent[] {
  const out: ConsentEvent[] = [];
  const of = (pred: (ch: RecordChange) => boolean) =>
    c.changes
      .filter(pred)
      .map((ch) => ({ recordId: ch.recordId, purpose: ch.purpose, granted: ch.to === 'granted' }));
  if (c.created) {
    out.push(
      build(
        c,
        'consent.created',
        c.txn.records.map((r) => ({
          recordId: r.recordId,
          purpose: r.purpose,
          granted: r.state === 'granted',
        })),
      ),
    );
  }
  const lists: [EventType, (ch: RecordChange) => boolean][] = [
    ['consent.granted', (ch) => ch.to === 'granted'],
    ['consent.withdrawn', (ch) => ch.from === 'granted' && ch.to === 'revoked'],
    ['consent.expired', (ch) => ch.to === 'expired'],
    ['data.deleted', (ch) => ch.to === 'erased'],
  ];
  for (const [type, pred] of lists) {
    const touched = of(pred);
    if (touched.length > 0) out.push(build(c, type, touched));
  }
  return out;
}

/**
 * `consent.expiry.reminder` for a transaction: no record changes, so not planned from changes; it
 * lists the records still granted, which are the ones about to lapse (docs/webhooks.md, Events).
 */
export function reminderEvent(c: EventContext): ConsentEvent {
  const granted = c.txn.records.filter((r) => r.state === 'granted');
  return build(
    c,
    'consent.expiry.reminder',
    granted.map((r) => ({ recordId: r.recordId, purpose: r.purpose, granted: true })),
  );
}

/**
 * `consent.parental_verification_required`: a capture under a notice that requires verifiable
 * parental consent. It lists the records awaiting the verification (each `false`: not granted
 * yet) and needs no postback: the app answers by confirming the verification through the API
 * (docs/parental-and-inactivity.md).
 */
export function parentalRequiredEvent(c: EventContext): ConsentEvent {
  const waiting = c.txn.records.filter((r) => r.state === 'pending');
  return build(
    c,
    'consent.parental_verification_required',
    waiting.map((r) => ({ recordId: r.recordId, purpose: r.purpose, granted: false })),
  );
}
