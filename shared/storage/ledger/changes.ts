import { shardOf } from '../timers/due.js';

/**
 * The ledger's change index (gsi3, keys only): every write that chains an entry to an existing
 * dispatch also stamps the dispatch item with the checkpoint period it changed in, so the
 * checkpoint sealer reads what changed in a period instead of scanning the ledger. The key
 * only moves when a dispatch changes in a new period, so most writes cost the index nothing
 * more.
 *
 * A dispatch created with its first attempt needs no stamp when it lands before the sealer
 * first reads its creation period (through gsi1, by event time): that first seal holds it. So
 * the dispatcher's usual write leaves the stamp out (one index entry less), and stamps only
 * what may land later (`needsStamp`, checked before the write and again once it landed), and
 * the first dispatch of an app in each process (the sealer finds an app it has not sealed yet
 * only through this index).
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

/** When the sealer first reads the period holding `createdAt` (ms): the period's end plus the lag. */
function firstSealAt(
  createdAt: string,
  c: { LEDGER_CHECKPOINT_PERIOD_MS: number; LEDGER_CHECKPOINT_LAG_MS: number },
): number {
  const periodMs = c.LEDGER_CHECKPOINT_PERIOD_MS;
  return periodStartOf(Date.parse(createdAt), periodMs) + periodMs + c.LEDGER_CHECKPOINT_LAG_MS;
}

/**
 * Whether a new dispatch item landing at `atMs` needs its change stamp: the sealer may have read
 * its creation period by then, give or take `LEDGER_CHANGE_STAMP_MARGIN_MS` (clock skew between
 * processes, the index catching up). An unparsable time always needs one.
 */
export function needsStamp(
  createdAt: string,
  atMs: number,
  c: {
    LEDGER_CHECKPOINT_PERIOD_MS: number;
    LEDGER_CHECKPOINT_LAG_MS: number;
    LEDGER_CHANGE_STAMP_MARGIN_MS: number;
  },
): boolean {
  const at = firstSealAt(createdAt, c);
  return !Number.isFinite(at) || atMs + c.LEDGER_CHANGE_STAMP_MARGIN_MS >= at;
}
