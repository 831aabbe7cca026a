import type { Dispatch } from '../../shared/storage/ledger/dispatches.js';
import { worstOf } from '../../shared/storage/ledger/summary.js';
import type { DispatchWithAttempts } from '../../shared/ledger/queries.js';
import type { DispatchDetail, DispatchSummary } from './schemas.js';

/**
 * The API shapes of ledger entries, built by picking named fields: whatever else the stored
 * items hold (the webhook body, trace context, due-index keys, storage keys) never leaves.
 */

const STORAGE = new Set(['pk', 'sk', 'gsi1pk', 'gsi1sk', 'gsi2pk', 'gsi2sk', 'type']);

type Loose = Record<string, unknown>;

const orNull = <T>(v: T | undefined): T | null => (v === undefined ? null : v);

export function summaryOf(d: Dispatch): DispatchSummary {
  return {
    dispatchId: d.dispatchId,
    eventId: d.eventId,
    event: d.event,
    appId: d.appId,
    environment: d.environment,
    referenceId: d.referenceId,
    createdAt: d.createdAt,
    dispatchedAt: d.dispatchedAt,
    deliveryStatus: d.deliveryStatus,
    attemptCount: d.attemptCount,
    lastAttemptAt: orNull(d.lastAttemptAt),
    nextAttemptAt: orNull(d.nextAttemptAt),
    deliveredAt: orNull(d.deliveredAt),
    postbackRequired: d.postbackRequired,
    postbackDueAt: orNull(d.postbackDueAt),
    complianceFlag: orNull(d.complianceFlag) as DispatchSummary['complianceFlag'],
    // Kept by the compliance worker; a dispatch it has not written since has only its current.
    worstFlag: worstOf([(d as { worstFlag?: unknown }).worstFlag, d.complianceFlag]),
  };
}

function attemptOf(a: Loose): DispatchDetail['attempts'][number] {
  const keys = [
    'attempt',
    'trigger',
    'time',
    'durationMs',
    'destination',
    'statusCode',
    'errorClass',
    'errorMessage',
    'responseExcerpt',
    'outcome',
    'deliveryStatus',
    'prevHash',
    'hash',
  ];
  return Object.fromEntries(
    keys.filter((k) => a[k] !== undefined).map((k) => [k, a[k]]),
  ) as DispatchDetail['attempts'][number];
}

/** Postback and flag entries come from the compliance worker: all but storage keys. */
const entryOf = (e: Loose): Loose =>
  Object.fromEntries(Object.entries(e).filter(([k]) => !STORAGE.has(k)));

/**
 * One dispatch with its chain. `postbacks`, `flagHistory` and `flagEntries` are read from
 * getDispatch when it provides them (the compliance worker's entries) and are empty lists
 * otherwise. Every chained field of every entry is shown (`flagEntries`: the flag changes with
 * their seq, previous flag and hashes), so an export can be verified without the service.
 */
export function detailOf(d: DispatchWithAttempts): DispatchDetail {
  const summary = summaryOf(d);
  return {
    ...summary,
    // From the whole history here, so also right for a dispatch the worker has not written since.
    worstFlag: worstOf([summary.worstFlag, ...(d.flagHistory ?? []).map((f) => f.flag)]),
    sequence: d.sequence,
    bodySha256: d.bodySha256,
    entryHash: d.entryHash,
    headHash: d.headHash,
    attempts: (d.attempts as unknown as Loose[]).map(attemptOf),
    postbacks: (d.postbacks ?? []).map(entryOf),
    flagHistory: (d.flagHistory ?? []).map(entryOf) as DispatchDetail['flagHistory'],
    flagEntries: (d.flagEntries ?? []).map(entryOf) as DispatchDetail['flagEntries'],
  };
}
