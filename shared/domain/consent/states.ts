/**
 * The consent record state machine and the transaction status derived from it (docs/api.md,
 * Record states).
 * Pure: no I/O, no clock. Every (state, operation) pair is decided here and nowhere else.
 */

export const RECORD_STATES = ['granted', 'denied', 'revoked', 'expired', 'erased'] as const;
export type RecordState = (typeof RECORD_STATES)[number];

/**
 * `grant`/`revoke`/`erase` come from the APIs; `expire` from the validity window (timers).
 * The record API's `false` is a `revoke` (a purpose never granted stays `denied`).
 */
export const RECORD_OPERATIONS = ['grant', 'revoke', 'erase', 'expire'] as const;
export type RecordOperation = (typeof RECORD_OPERATIONS)[number];

export const TRANSACTION_STATUSES = [
  'active',
  'partially_revoked',
  'revoked',
  'erased',
  'expired',
] as const;
export type TransactionStatus = (typeof TRANSACTION_STATUSES)[number];

export type Transition =
  /** `changed: false` is an idempotent no-op: 200, no history entry, no event. */
  | { ok: true; to: RecordState; changed: boolean }
  /** Refused: the caller answers 409 SVC_CONFLICT. */
  | { ok: false; reason: string };

const stay = (s: RecordState): Transition => ({ ok: true, to: s, changed: false });
const move = (s: RecordState): Transition => ({ ok: true, to: s, changed: true });
const refuse = (reason: string): Transition => ({ ok: false, reason });

/**
 * Decisions beyond the state diagram (docs/api.md, Record states):
 * - revoke on `denied`: no-op. Nothing was granted, so nothing is withdrawn and no
 *   `consent.withdrawn` (with its 1 h postback) is owed.
 * - revoke on `expired`: no-op, for the same reason.
 * - grant on `expired`: 409. The validity window ended; consent must be captured again
 *   (a new transaction with a notice shown), not revived silently.
 * - grant on `erased`: 409; erased is terminal. Every other operation on `erased` is a no-op.
 */
export function transition(from: RecordState, op: RecordOperation): Transition {
  switch (op) {
    case 'grant':
      if (from === 'granted') return stay(from);
      if (from === 'denied' || from === 'revoked') return move('granted');
      if (from === 'expired') return refuse('consent expired; it must be captured again');
      return refuse('consent was erased; erased records cannot be granted again');
    case 'revoke':
      return from === 'granted' ? move('revoked') : stay(from);
    case 'expire':
      return from === 'expired' || from === 'erased' ? stay(from) : move('expired');
    case 'erase':
      return from === 'erased' ? stay(from) : move('erased');
  }
}

/**
 * The transaction status. Erased records are ignored once at least one record is not
 * erased: a transaction with one erased and one granted purpose is still `active`.
 */
export function deriveStatus(states: readonly RecordState[]): TransactionStatus {
  if (states.length > 0 && states.every((s) => s === 'erased')) return 'erased';
  const live = states.filter((s) => s !== 'erased');
  if (live.length > 0 && live.every((s) => s === 'expired')) return 'expired';
  const granted = live.includes('granted');
  const revoked = live.includes('revoked');
  if (granted && revoked) return 'partially_revoked';
  if (revoked) return 'revoked';
  return 'active';
}
