import type { App } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { exportDispatches, type DispatchQuery } from '../../shared/ledger/export.js';
import { getDispatch, verifyDispatchChain } from '../../shared/ledger/queries.js';
import { LedgerVerifier, type VerifyReport } from '../../shared/ledger/verify.js';
import type { Runtime } from '../../shared/runtime.js';
import type { KeyRing } from '../../shared/signing/keys.js';
import type { RangeVerifyResponse, VerifyResponse } from './schemas.js';
import { detailOf } from './view.js';

/**
 * The ledger API's verification: the same checks an auditor runs offline on an export
 * (shared/ledger/verify.ts), over what the service reads, against its own public keys.
 * Checkpoints are read before the dispatches: a checkpoint signed meanwhile could seal heads
 * newer than dispatches already read, never older.
 */

const iso = (ms: number) => new Date(ms).toISOString();

function finishing(rt: Runtime, v: LedgerVerifier, exportedAt: string): VerifyReport {
  return v.finish({
    exportedAt,
    periodMs: rt.config.LEDGER_CHECKPOINT_PERIOD_MS,
    lagMs: rt.config.LEDGER_CHECKPOINT_LAG_MS,
  });
}

/** One dispatch: chain, head fields, and the checkpoint in force for its period. */
export async function verifyDispatch(
  rt: Runtime,
  keys: KeyRing,
  app: App,
  dispatchId: string,
): Promise<VerifyResponse> {
  const readAt = iso(Date.now());
  const probe = await getDispatch(rt, dispatchId);
  if (!probe || probe.appId !== app.appId) throw new AppError('SVC_NOT_FOUND', 'No such dispatch');
  // The range that holds this dispatch's createdAt alone selects its period's checkpoints.
  const scope = {
    from: probe.createdAt,
    to: iso(Date.parse(probe.createdAt) + 1),
    dispatchId,
  };
  const v = new LedgerVerifier(keys.verifiers, scope);
  for (const c of await rt.ledger.checkpointsFor(app.appId, scope.from, scope.to))
    v.addCheckpoint(c);
  const d = await getDispatch(rt, dispatchId);
  const chain = await verifyDispatchChain(rt, dispatchId);
  if (!d) throw new AppError('SVC_NOT_FOUND', 'No such dispatch');
  const detail = detailOf(d);
  v.addDispatch(detail);
  const report = finishing(rt, v, readAt);
  const seal = v.sealOf(dispatchId);
  const base = {
    dispatchId,
    ok: chain.ok && report.ok,
    entries: chain.ok
      ? chain.entries
      : 1 + detail.attempts.length + detail.postbacks.length + detail.flagHistory.length,
    headHash: detail.headHash,
    failures: report.failures,
    seal: seal
      ? {
          checkpoint: seal.checkpoint.seq,
          periodStart: seal.checkpoint.periodStart,
          periodEnd: seal.checkpoint.periodEnd,
          sealedHead: seal.leaf.headHash,
          entriesAfter: report.unsealed.find((u) => u.dispatchId === dispatchId)?.entries ?? 0,
        }
      : null,
  };
  if (!chain.ok) return { ...base, brokenAt: chain.at, reason: chain.reason };
  const first = report.failures[0];
  if (first) return { ...base, brokenAt: first.at ?? 'CHECKPOINT', reason: first.reason };
  return base;
}

const MAX_FAILURES = 1_000;
const MAX_UNSEALED = 100;

/** Every dispatch of the app created in [from, to), against the checkpoints of those periods. */
export async function verifyRange(
  rt: Runtime,
  keys: KeyRing,
  q: DispatchQuery & { from: string; to: string },
  signal?: AbortSignal,
): Promise<RangeVerifyResponse> {
  const readAt = iso(Date.now());
  const v = new LedgerVerifier(keys.verifiers, { from: q.from, to: q.to });
  for (const c of await rt.ledger.checkpointsFor(q.appId, q.from, q.to)) v.addCheckpoint(c);
  for await (const d of exportDispatches(rt, q, signal ? { signal } : {}))
    v.addDispatch(detailOf(d));
  const r = finishing(rt, v, readAt);
  return {
    ...r,
    appId: r.appId ?? q.appId,
    failureCount: r.failures.length,
    failures: r.failures.slice(0, MAX_FAILURES),
    unsealedCount: r.unsealed.length,
    unsealed: r.unsealed.slice(0, MAX_UNSEALED),
  };
}
