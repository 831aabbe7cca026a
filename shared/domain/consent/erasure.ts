import type { ConsentDeps } from './deps.js';
import type { StoredTransaction } from './model.js';
import { deriveStatus } from './states.js';
import type { ExtraWrite } from './store.js';

/**
 * The principal's `erasedAt`: set when the last of its transactions becomes erased, to the
 * time of that erase. Principal tokens issued before it stop working (shared/principal), so a
 * person who erased everything, or whose app erased it, cannot be read or acted for through an
 * old token. Erased is terminal for a record, so "all erased" stays true until a new
 * transaction is added; a later full erasure moves `erasedAt` forward.
 */

/** When the transaction's last record changed: for an erased one, when it was erased. */
const lastChange = (t: Pick<StoredTransaction, 'updatedAt' | 'records'>) =>
  Math.max(Date.parse(t.updatedAt), ...t.records.map((r) => Date.parse(r.updatedAt)));

/**
 * Whether every transaction of the principal, `except` aside, is erased (a consistent read):
 * the time of the latest of those erasures (0 when there is none), or undefined when one is not.
 */
export async function erasedExcept(
  rt: ConsentDeps,
  appId: string,
  referenceId: string,
  except?: string,
): Promise<number | undefined> {
  let latest = 0;
  // Stops reading at the first live transaction.
  for await (const items of rt.sweeps.erasure.transactionPages(appId, referenceId)) {
    for (const t of items) {
      if (t.transactionId === except) continue;
      if (deriveStatus(t.records.map((x) => x.state)) !== 'erased') return undefined;
      latest = Math.max(latest, lastChange(t));
    }
  }
  return latest;
}

/** The marker as part of the erase's own write (the common case: the last one erased). */
export function markErasedWrite(referenceId: string, at: string): ExtraWrite {
  return {
    write: { op: 'mark-erased', referenceId, at },
    conflict: 'The principal of this transaction no longer exists',
  };
}

/**
 * After an erase that did not write the marker (another transaction was still live when it
 * read, or it was a repeat): marks the principal if everything is erased by now. This covers
 * two erasures racing for a principal's last two transactions, and repairs a marker lost to a
 * crash the next time anything of the principal is erased. Idempotent: the value is the time
 * of the latest erasure, never moved back.
 */
export async function markIfAllErased(
  rt: ConsentDeps,
  appId: string,
  referenceId: string,
): Promise<void> {
  const latest = await erasedExcept(rt, appId, referenceId);
  if (latest === undefined || latest === 0) return;
  await rt.sweeps.erasure.markErased(appId, referenceId, new Date(latest).toISOString());
}
