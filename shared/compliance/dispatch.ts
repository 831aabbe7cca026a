import type { EventType } from '../domain/consent/events.js';
import { getDispatchState } from '../storage/ledger/dispatches.js';
import type { LedgerDeps } from '../storage/ledger/deps.js';

/** What finding a dispatch uses: the ledger's table (shared/storage/ledger); a Runtime is one. */
export type FindDispatchDeps = LedgerDeps;

/** What the postback API needs to know about a dispatch. */
export interface DispatchRef {
  dispatchId: string;
  appId: string;
  event: EventType;
  referenceId: string;
  postbackRequired: boolean;
  /** Postbacks the API accepted for it so far. */
  postbacksAccepted: number;
}

/**
 * The dispatch named by a postback, from the ledger (one consistent read of the dispatch item,
 * not its attempts). The only place this service touches the ledger's storage.
 */
export async function findDispatch(
  rt: FindDispatchDeps,
  dispatchId: string,
): Promise<DispatchRef | undefined> {
  const d = await getDispatchState(rt, dispatchId);
  if (!d) return undefined;
  return {
    dispatchId: d.dispatchId,
    appId: d.appId,
    event: d.event,
    referenceId: d.referenceId,
    postbackRequired: d.postbackRequired,
    postbacksAccepted: Number((d as { postbacksAccepted?: unknown }).postbacksAccepted ?? 0),
  };
}
