import { z } from 'zod';
import type { DueAttributes, DueLease } from '../due-attributes.js';
import { patterns, recordUuid } from '../ids.js';
import {
  RECORD_STATES,
  TRANSACTION_STATUSES,
  deriveStatus,
  type RecordOperation,
} from './states.js';

/**
 * Shapes of the consent domain: the stored items (interfaces) and the public bodies (zod, the
 * single source for validation, types and OpenAPI).
 */

export const SOURCES = ['widget', 'api', 'portal'] as const;
export type Source = (typeof SOURCES)[number];

/**
 * Most records one transaction may hold: its item (records and history inline) stays well under
 * DynamoDB's 400 KB, and each record id is one of the 255 its transaction id derives.
 */
export const MAX_RECORDS = 45;

/**
 * Default validity window for transactions created without a notice (docs/architecture.md,
 * Expiry).
 */
export const DEFAULT_VALIDITY_DAYS = 365;

export const purposeName = z
  .string()
  .regex(patterns.purpose, 'purpose names match ^[a-z][a-z0-9_]{0,63}$');

export const recordSchema = z.object({
  recordId: z.string(),
  purpose: z.string(),
  state: z.enum(RECORD_STATES),
  updatedAt: z.string(),
});
export type ConsentRecord = z.infer<typeof recordSchema>;

/** A record as stored: what `compactRecords` leaves out is put back by `withFullRecords`. */
export type StoredRecord = Pick<ConsentRecord, 'purpose' | 'state'> & Partial<ConsentRecord>;

/** The id the `i`th record of a transaction has when its id follows from its place. */
function idAt(transactionId: string, i: number): string | undefined {
  return transactionId.endsWith('00') && i < 255 ? recordUuid(transactionId, i + 1) : undefined;
}

/**
 * A transaction's records as stored, without what follows from the transaction: a record's
 * `recordId` when it is the one its place derives from the transaction id (ids.ts,
 * `recordUuid`: a record created with the transaction or added later in order), and its
 * `updatedAt` when that is the transaction's `createdAt` (a record as created, until it
 * changes). About 80 bytes a record of the kilobyte DynamoDB bills a write by.
 * `withFullRecords` puts both back on every read of an item.
 */
export function compactRecords(
  t: Pick<StoredTransaction, 'transactionId' | 'createdAt' | 'records'>,
): StoredRecord[] {
  return t.records.map((r, i) => {
    const { recordId, updatedAt, ...rest } = r;
    return {
      ...(recordId === idAt(t.transactionId, i) ? {} : { recordId }),
      ...rest,
      ...(updatedAt === t.createdAt ? {} : { updatedAt }),
    };
  });
}

/** A transaction read from its item, each record whole again (see `compactRecords`). */
export function withFullRecords<
  T extends Pick<StoredTransaction, 'transactionId' | 'createdAt' | 'records'>,
>(t: T): T {
  const stored = t.records as StoredRecord[];
  if (!Array.isArray(stored) || stored.every((r) => r.recordId && r.updatedAt)) return t;
  return {
    ...t,
    records: stored.map((r, i) => {
      const recordId = r.recordId ?? idAt(t.transactionId, i);
      if (recordId === undefined)
        throw new Error(`transaction ${t.transactionId}: record ${i} has no id`);
      return { recordId, ...r, updatedAt: r.updatedAt ?? t.createdAt };
    }),
  };
}

/** Public Transaction body (docs/api.md, Public consent API). */
export const transactionSchema = z.object({
  transactionId: z.string(),
  referenceId: z.string(),
  userId: z.string().optional(),
  /** The notice's trigger key; null for transactions created by the record API. */
  processId: z.string().nullable(),
  noticeId: z.string().nullable(),
  noticeVersion: z.number().int().nullable(),
  language: z.string().nullable(),
  source: z.enum(SOURCES),
  status: z.enum(TRANSACTION_STATUSES),
  createdAt: z.string(),
  expiresAt: z.string(),
  /** The region the widget capture was made for (ISO 3166-2:IN), when the page named one. */
  region: z.string().optional(),
  /**
   * Present when the notice required verifiable parental consent: whether the app has
   * confirmed the verification (docs/parental-and-inactivity.md).
   */
  parentalVerification: z
    .object({
      status: z.enum(['pending', 'verified', 'failed']),
      method: z.string().optional(),
      verifiedAt: z.string().optional(),
    })
    .optional(),
  records: z.array(recordSchema),
});
export type TransactionView = z.infer<typeof transactionSchema>;

/** What the widget capture stores as evidence of the decision (never the raw IP). */
export interface CaptureProof {
  noticeVersion: number;
  textHash: string;
  language: string;
  capturedAt: string;
  pageUrl: string;
  userAgent: string;
  ipHash: string;
  mode: 'silent' | 'granular';
  /** The region the page named, which chose the notice (docs/api.md, Regions); absent: none. */
  region?: string;
}

/**
 * Verifiable parental consent of a transaction captured under a notice that requires it
 * (parental.ts): `pending` until the app confirms the verification (`verified`, with the
 * method, its reference and when it was done) or reports that it failed (`failed`).
 */
export interface ParentalVerification {
  status: 'pending' | 'verified' | 'failed';
  /** When the transaction was captured and the verification became due. */
  requestedAt: string;
  method?: string;
  /** The app's reference of the verification (e.g. a DigiLocker token reference). */
  reference?: string;
  /** When the app says the verification was done (or failed). */
  verifiedAt?: string;
  /** When the app reported it to the service. */
  decidedAt?: string;
  remark?: string;
}

/**
 * The transaction item in `entities`: records inline, `version` for optimistic locking. It may
 * carry its pending first expiry-family timer and that timer's
 * lease (`duepk`, `duesk`, `duekind`, `dueLeaseUntil`, `dueLeaseToken`: storage attributes of
 * the derived due-index, shared/storage/timers/derived.ts and timers.ts), loaded and written back with
 * the rest so a rewrite keeps them; no view or event shows them.
 */
export interface StoredTransaction extends Partial<DueAttributes & DueLease> {
  appId: string;
  transactionId: string;
  referenceId: string;
  userId?: string;
  processId: string | null;
  noticeId: string | null;
  noticeVersion: number | null;
  language: string | null;
  source: Source;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
  records: ConsentRecord[];
  version: number;
  /**
   * The `data.sequence` of the last event the transaction emitted. A write moves it on by the
   * number of its events, which take the numbers in between, and is conditional on the
   * `version` it read, so two changes never take the same numbers (writer.ts).
   */
  sequence: number;
  proof?: CaptureProof;
  /** When the `consent.expiry.reminder` went out (sent once). */
  reminderSentAt?: string;
  /** Only under a notice that requires verifiable parental consent. */
  parental?: ParentalVerification;
  /**
   * Every change of the transaction's records, oldest first, appended with each write and never
   * rewritten: who, what, when. Not part of any API view. Absent while the transaction is as
   * created: its creation entries follow from its records and `createdBy` (carried.ts,
   * `historyOf`), and its first change writes them out.
   */
  history?: HistoryEntry[];
  /** Who created the transaction: with `history` absent, the author of its creation entries. */
  createdBy?: Actor;
  /**
   * The app's environment when the transaction was created: with its records as created, what
   * its creation events are rebuilt from (carried.ts).
   */
  environment?: 'sandbox' | 'live';
}

export interface StoredPrincipal {
  appId: string;
  referenceId: string;
  userId?: string;
  /**
   * The user's record (record API), on a principal whose referenceId was derived from its user
   * id: it then stands for the user pointer item (repository.ts, `loadUser`).
   */
  userTransactionId?: string;
  email?: string;
  createdAt: string;
  updatedAt: string;
  /**
   * When every transaction of the principal was last found erased: principal tokens issued
   * before it no longer work (see manage.ts).
   */
  erasedAt?: string;
  /**
   * The principal's last recorded activity (inactivity.ts): moved only when it is more than a
   * day old (compressed for sandbox apps), or when an inactivity warning stands.
   */
  lastActiveAt?: string;
  /** When the inactivity warning was queued; removed by the next activity. */
  inactivityWarnedAt?: string;
}

/**
 * A user's claim at the referenceId its user id derives to, for a user whose principal is at
 * another (repository.ts, `putClaim`): stored at that referenceId's principal key.
 */
export interface StoredClaim {
  appId: string;
  userId: string;
  /** The referenceId of the user's principal. */
  claimOf: string;
  transactionId: string;
  createdAt: string;
}

export interface UserPointer {
  appId: string;
  userId: string;
  referenceId: string;
  transactionId: string;
  createdAt: string;
}

/** Who made a change: the interface and the credential (API key id, "secretKey", "siteKey"). */
export interface Actor {
  source: Source;
  credential: string;
}

export type HistoryOperation = RecordOperation | 'create';

/** One changed record of one operation, as kept in the immutable history. */
export interface RecordChange {
  recordId: string;
  purpose: string;
  from: ConsentRecord['state'] | null;
  to: ConsentRecord['state'];
  operation: HistoryOperation;
}

/**
 * One changed record of one operation, with who made the change and when. The purpose is the
 * record's, and the notice, its version and the language are the transaction's own (no change
 * alters them), so an entry does not repeat them: DynamoDB bills each write by the kilobyte.
 */
export interface HistoryEntry extends Omit<RecordChange, 'purpose'> {
  at: string;
  who: Actor;
}

export function toView(t: StoredTransaction): TransactionView {
  return {
    transactionId: t.transactionId,
    referenceId: t.referenceId,
    ...(t.userId !== undefined ? { userId: t.userId } : {}),
    processId: t.processId,
    noticeId: t.noticeId,
    noticeVersion: t.noticeVersion,
    language: t.language,
    source: t.source,
    status: deriveStatus(t.records.map((r) => r.state)),
    createdAt: t.createdAt,
    expiresAt: t.expiresAt,
    ...(t.proof?.region !== undefined ? { region: t.proof.region } : {}),
    ...(t.parental
      ? {
          parentalVerification: {
            status: t.parental.status,
            ...(t.parental.method !== undefined ? { method: t.parental.method } : {}),
            ...(t.parental.verifiedAt !== undefined ? { verifiedAt: t.parental.verifiedAt } : {}),
          },
        }
      : {}),
    records: t.records.map((r) => ({
      recordId: r.recordId,
      purpose: r.purpose,
      state: r.state,
      updatedAt: r.updatedAt,
    })),
  };
}
