import { AppError, coerceError } from '../../errors.js';
import type { ConsentDeps } from './deps.js';
import { applyOperation } from './apply.js';
import { erasedExcept, markErasedWrite, markIfAllErased } from './erasure.js';
import { toView, type StoredTransaction, type TransactionView } from './model.js';
import { deriveStatus } from './states.js';
import type { ExtraWrite } from './store.js';
import { mutateTransaction, type WriteContext } from './writer.js';

/**
 * The public consent-management API (docs/api.md, Public consent API): transactions and records
 * of a principal.
 */

export type PublicOperation = 'grant' | 'revoke' | 'erase';
export const PUBLIC_OPERATIONS = ['grant', 'revoke', 'erase'] as const;

/** Most ids one bulk call may name. */
export const MAX_BULK_IDS = 100;

const unknownTxn = () => new AppError('SVC_NOT_FOUND', 'Unknown transaction');
const unknownRecord = () => new AppError('SVC_NOT_FOUND', 'Unknown record');

/**
 * A transaction of the app, seen as the public body; undefined when the id is unknown to this
 * app (another app's ids look exactly like unknown ones).
 */
export async function getTransaction(
  rt: ConsentDeps,
  appId: string,
  transactionId: string,
): Promise<TransactionView | undefined> {
  const t = await rt.consents.loadTransaction(appId, transactionId);
  return t && toView(t);
}

/** The stored item, proof included (for the widget and audits). */
export function getStoredTransaction(
  rt: Pick<ConsentDeps, 'consents'>,
  appId: string,
  transactionId: string,
) {
  return rt.consents.loadTransaction(appId, transactionId);
}

export async function listTransactions(
  rt: ConsentDeps,
  appId: string,
  referenceId: string,
  page: { limit: number; cursor?: string | undefined },
): Promise<{ items: TransactionView[]; nextCursor: string | null }> {
  const r = await rt.consents.listTransactions(appId, referenceId, page.limit, page.cursor);
  return { items: r.items.map(toView), nextCursor: r.nextCursor };
}

/** When the caller names the principal, the target must belong to it (else 404). */
function belongs(t: StoredTransaction, referenceId: string | undefined) {
  return referenceId === undefined || t.referenceId === referenceId;
}

const erased = (t: Pick<StoredTransaction, 'records'>) =>
  deriveStatus(t.records.map((r) => r.state)) === 'erased';

/**
 * Applies `op` to one transaction (all its records, or `recordIds`). An erase that leaves the
 * principal with nothing but erased transactions also marks the principal erased (erasure.ts),
 * in the same write when the other transactions were already erased when it read them. A
 * `guard` (a condition on the principal item) joins the write; the marker then follows the
 * write instead (one write may not touch an item twice).
 */
async function operate(
  ctx: WriteContext,
  at: { referenceId: string; transactionId: string },
  op: PublicOperation,
  recordIds?: ReadonlySet<string>,
  guard?: ExtraWrite,
): Promise<TransactionView> {
  const { appId } = ctx.app;
  const othersErased =
    op === 'erase' &&
    (await erasedExcept(ctx.rt, appId, at.referenceId, at.transactionId)) !== undefined;
  let marked = false;
  const { txn } = await mutateTransaction(
    ctx,
    () => ctx.rt.consents.loadTransactionAt(appId, at.referenceId, at.transactionId),
    (t, now) => {
      const applied = applyOperation(t.records, op, now, recordIds);
      marked = !guard && othersErased && applied.changes.length > 0 && erased(applied);
      if (guard) return { ...applied, extra: [guard] };
      if (!marked) return applied;
      return { ...applied, extra: [markErasedWrite(t.referenceId, now)] };
    },
  );
  if (op === 'erase' && !marked && erased(txn))
    await markIfAllErased(ctx.rt, appId, txn.referenceId);
  return toView(txn);
}

export async function operateOnTransaction(
  ctx: WriteContext,
  transactionId: string,
  op: PublicOperation,
  referenceId?: string,
): Promise<TransactionView> {
  const first = await ctx.rt.consents.loadTransaction(ctx.app.appId, transactionId);
  if (!first || !belongs(first, referenceId)) throw unknownTxn();
  return operate(ctx, first, op);
}

export async function operateOnRecord(
  ctx: WriteContext,
  recordId: string,
  op: PublicOperation,
  referenceId?: string,
): Promise<TransactionView> {
  const ptr = await ctx.rt.consents.loadRecordPointer(ctx.app.appId, recordId);
  if (!ptr || (referenceId !== undefined && ptr.referenceId !== referenceId)) throw unknownRecord();
  return operate(ctx, ptr, op, new Set([recordId]));
}

/**
 * Erases every transaction of a principal, each in its own write joined by `guard` (which stops
 * the erasure as soon as it fails: 409 with the guard's conflict). Already erased transactions
 * are left as they are; the principal is marked erased at the end. Returns the number of
 * transactions this call erased.
 */
export async function erasePrincipal(
  ctx: WriteContext,
  referenceId: string,
  guard?: ExtraWrite,
): Promise<number> {
  let erasedNow = 0;
  const store = ctx.rt.consents;
  for (const transactionId of await store.allTransactionIds(ctx.app.appId, referenceId)) {
    const before = await store.loadTransactionAt(ctx.app.appId, referenceId, transactionId);
    if (!before || erased(before)) continue;
    await operate(ctx, { referenceId, transactionId }, 'erase', undefined, guard);
    erasedNow++;
  }
  return erasedNow;
}

export interface BulkTargets {
  referenceId: string;
  transactionIds?: string[] | undefined;
  recordIds?: string[] | undefined;
}

export interface BulkResult {
  id: string;
  ok: boolean;
  status?: TransactionView['status'];
  error?: { code: string; detail: string };
}

/**
 * Applies `op` to each named transaction and record of the principal, each atomically on its
 * own and in order (so one principal's events stay in order). A failed item (unknown id,
 * 409, a busy store) is reported in its result; it never fails the call.
 */
export async function bulkOperate(
  ctx: WriteContext,
  op: PublicOperation,
  targets: BulkTargets,
): Promise<BulkResult[]> {
  const named = targets.transactionIds !== undefined || targets.recordIds !== undefined;
  const txnIds = named
    ? (targets.transactionIds ?? [])
    : await ctx.rt.consents.allTransactionIds(ctx.app.appId, targets.referenceId);
  type Job = { id: string; run: () => Promise<TransactionView> };
  const jobs: Job[] = [
    ...txnIds.map((id) => ({
      id,
      run: () => operateOnTransaction(ctx, id, op, targets.referenceId),
    })),
    ...(targets.recordIds ?? []).map((id) => ({
      id,
      run: () => operateOnRecord(ctx, id, op, targets.referenceId),
    })),
  ];
  const results: BulkResult[] = [];
  for (const { id, run } of jobs) {
    try {
      const view = await run();
      results.push({ id, ok: true, status: view.status });
    } catch (err) {
      const e = coerceError(err);
      if (e.status >= 500) ctx.rt.log.warn({ err, id }, 'bulk consent item failed');
      results.push({ id, ok: false, error: { code: e.code, detail: e.message } });
    }
  }
  return results;
}
