import { shardOf } from '../timers/due.js';

/**
 * The ledger's change index (gsi3, keys only): every write that chains an entry to a dispatch
 * also stamps the dispatch item with the checkpoint period it changed in, so the checkpoint
 * sealer reads what changed in a period instead of scanning the ledger. The key only moves
 * when a dispatch changes in a new period, so most writes cost the index nothing more.
 *
 *   gsi3pk = `CHG#{shard}`   (by dispatch id: spreads the index's write load)
 *   gsi3sk = `{period start}#{appId}#{createdAt}#{dispatchId}`
 */

export const CHANGE_SHARDS = 8;

export interface ChangeKeys {
  gsi3pk: string;
  gsi3sk: string;
}

/** Start (epoch ms) of the period of length `periodMs` holding `ms`. */
export const periodStartOf = (ms: number, periodMs: number) => Math.floor(ms / periodMs) * periodMs;

export function changeKeys(
  d: { dispatchId: string; appId: string; createdAt: string },
  nowMs: number,
  periodMs: number,
): ChangeKeys {
  const stamp = new Date(periodStartOf(nowMs, periodMs)).toISOString();
  return {
    gsi3pk: `CHG#${shardOf(d.dispatchId, CHANGE_SHARDS)}`,
    gsi3sk: `${stamp}#${d.appId}#${d.createdAt}#${d.dispatchId}`,
  };
}

export interface Change {
  /** Start of the period the dispatch last changed in (ISO). */
  changedIn: string;
  appId: string;
  createdAt: string;
  dispatchId: string;
}

export function parseChangeKey(sk: string): Change | undefined {
  const [changedIn, appId, createdAt, dispatchId, ...rest] = sk.split('#');
  if (!changedIn || !appId || !createdAt || !dispatchId || rest.length > 0) return undefined;
  return { changedIn, appId, createdAt, dispatchId };
}
