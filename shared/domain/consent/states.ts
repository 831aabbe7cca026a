/**
 * The consent record state machine and the transaction status derived from it (docs/api.md,
 * Record states).
 * Pure: no I/O, no clock. Every (state, operation) pair is decided here and nowhere else.
 */

export const RECORD_STATES = [
  'granted',
  'denied',
  'revoked',
  'expired',
  'erased',
  'pending',
] as const;
export type RecordState = (typeof RECORD_STATES)[number];

/**
 * `grant`/`revoke`/`erase` come from the APIs; `expire` from the validity window (timers).
 * The record API's `false` is a `revoke` (a purpose never granted stays `denied`).
 * `verify`/`refuse` settle a `pending` record (a purpose chosen under a notice that requires
 * verifiable parental consent): the app's confirmation of the verification, or its failure.
 */
export const RECORD_OPERATIONS = [
  'grant',
  'revoke',
  'erase',
  'expire',
  'verify',
  'refuse',
] as const;
export type RecordOperation = (typeof RECORD_OPERATIONS)[number];

export const TRANSACTION_STATUSES = [
  'pending',
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
 * - grant on `pending`: 409. Only the app's confirmation of the parental verification
 *   (`verify`) grants it; the child cannot grant it alone.
 * - revoke on `pending`: `denied`. Nothing was granted, so no `consent.withdrawn` is owed.
 * - `verify`/`refuse` move only `pending` records (to `granted`/`denied`); on any other state
 *   they are no-ops, so a repeated confirmation changes nothing and emits nothing.
 */
export function transition(from: RecordState, op: RecordOperation): Transition {
  switch (op) {
    case 'verify':
      return from === 'pending' ? move('granted') : stay(from);
    case 'refuse':
      return from === 'pending' ? move('denied') : stay(from);
    case 'grant':
      if (from === 'pending')
        return refuse('awaiting verifiable parental consent; the app confirms it');
      if (from === 'granted') return stay(from);
      if (from === 'denied' || from === 'revoked') return move('granted');
      if (from === 'expired') return refuse('consent expired; it must be captured again');
      return refuse('consent was erased; erased records cannot be granted again');
    case 'revoke':
      if (from === 'pending') return move('denied');
      return from === 'granted' ? move('revoked') : stay(from);
    case 'expire':
      return from === 'expired' || from === 'erased' ? stay(from) : move('expired');
    case 'erase':
      return from === 'erased' ? stay(from) : move('erased');
  }
}

/**
 * The transaction status. Erased records are ignored once at least one record is not
 * erased: a transaction with one erased and one granted purpose is still `active`. A record
 * awaiting parental verification makes the transaction `pending`.
 */
export function deriveStatus(states: readonly RecordState[]): TransactionStatus {
  if (states.length > 0 && states.every((s) => s === 'erased')) return 'erased';
  const live = states.filter((s) => s !== 'erased');
  if (live.length > 0 && live.every((s) => s === 'expired')) return 'expired';
  if (live.includes('pending')) return 'pending';
  const granted = live.includes('granted');
  const revoked = live.includes('revoked');
  if (granted && revoked) return 'partially_revoked';
  if (revoked) return 'revoked';
  return 'active';
}
