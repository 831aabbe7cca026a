import type { WriteMode } from './writer.js';

/**
 * How the dispatcher treats each consent event it takes from Kafka: pure decisions, given what
 * it knows, so the rules are unit-tested apart from Kafka and the ledger.
 */

/**
 * An event created less than FRESH_MS ago, and after its partition was assigned here (plus
 * the producers' allowed clock skew), can only have been recorded by this process, in the
 * last FRESH_MS: the handler's memory of recent dispatches answers for it without a ledger read.
 */
export const FRESH_MS = 30_000;

export interface Arrival {
  /** In the first offsets after an assignment: a previous owner may have handled it. */
  uncertain: boolean;
  /** When its partition was (last) assigned to this consumer. */
  assignedAtMs: number;
  /** The event's own createdAt, in ms. */
  createdAtMs: number;
}

/**
 * Whether someone else may have recorded the event: a previous owner of the partition, or
 * anyone if it was created before this assignment or a while ago (the outbox publishes at
 * least once, so a late copy can come). Such an event is looked up in the ledger first and
 * written conditionally.
 */
export function isDoubtful(a: Arrival, nowMs: number, skewMs: number): boolean {
  if (a.uncertain) return true;
  const fresh = a.createdAtMs > nowMs - FRESH_MS && a.createdAtMs > a.assignedAtMs + skewMs;
  return !fresh;
}

/**
 * What to do with an event: `join` the attempt this process is already making for it,
 * `skip` it (the ledger or this process's recent memory has it), or `dispatch` it.
 */
export function actionFor(k: {
  running: boolean;
  recorded: boolean;
}): 'join' | 'skip' | 'dispatch' {
  if (k.running) return 'join';
  if (k.recorded) return 'skip';
  return 'dispatch';
}

/**
 * How the first attempt's record is written: group-committed without conditions (`fast`) only
 * for an event no one else can have recorded, while its partition is certainly still held
 * here; otherwise as a conditional transaction (`safe`).
 */
export function writeModeFor(doubtful: boolean, held: boolean): WriteMode {
  return !doubtful && held ? 'fast' : 'safe';
}
