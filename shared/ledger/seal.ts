import type { BaseConfig } from '../config.js';
import type { Logger } from '../logger.js';
import type { KeyRing } from '../signing/keys.js';
import { periodStartOf, type Change } from '../storage/ledger/changes.js';
import { type PeriodPointer } from '../storage/ledger/checkpoint-store.js';
import { checkpointProblem, signCheckpoint } from './checkpoint.js';
import type { Checkpoint, Leaf } from '../domain/ledger/checkpoints.js';
import { creationOf, isDispatchHead, DISPATCH_SK } from '../storage/ledger/dispatches.js';
import { checkChain, storedEntries } from './evidence.js';
import { GENESIS } from '../domain/ledger/hash.js';
import { merkleRoot } from './merkle.js';
import type { Ledger } from './port.js';

/**
 * The sealer: once a period has been closed for the configured lag, every app with a chain
 * gets a checkpoint for it (an empty period too, so a missing checkpoint can never pass for a
 * quiet hour), and every sealed period holding a dispatch that changed since is sealed again.
 * Which dispatches changed comes from the change index, read one period back as well, so a
 * write that landed late is still picked up. Any number of copies may run: a checkpoint's seq
 * is taken with a conditional write, and the loser starts over from the new chain head.
 *
 * A new version of a period is only signed when the ledger still holds everything the version
 * before it sealed: every dispatch, and in each its sealed head on an intact chain. Otherwise
 * the sealer refuses and reports; it never signs a ledger that lost sealed entries.
 */

/** What the sealer uses: the ledger, the log, and the checkpoints' period and lag; a Runtime is one. */
export interface SealDeps {
  ledger: Ledger;
  log: Logger;
  config: Pick<BaseConfig, 'LEDGER_CHECKPOINT_PERIOD_MS' | 'LEDGER_CHECKPOINT_LAG_MS'>;
}

export interface Refusal {
  appId: string;
  periodStart?: string;
  reason: string;
}

export interface SealResult {
  /** Every period ending at or before this instant is now sealed (ISO). */
  closedThrough: string;
  apps: number;
  /** Checkpoints of periods sealed for the first time, and of periods sealed again. */
  sealed: number;
  resealed: number;
  refusals: Refusal[];
  checkpoints: Checkpoint[];
}

class Conflict extends Error {}

const iso = (ms: number) => new Date(ms).toISOString();
const MAX_CONFLICTS = 5;

interface Target {
  start: string;
  end: string;
  pointer?: PeriodPointer;
}

/**
 * The chain heads one sealer has seen, by app. A chain found shorter than what this sealer
 * saw, or with another checkpoint at a seq it saw, lost checkpoints: it refuses to build on it.
 */
export type SeenHeads = Map<string, { seq: number; hash: string }>;

/**
 * Seals what is due at `nowMs`; undefined when every closed period was already handled.
 * Throws when an app could not be handled (the next call does it again); refusals are not
 * errors, they are returned.
 */
export async function sealClosedPeriods(
  rt: SealDeps,
  keys: KeyRing,
  nowMs: number,
  seen: SeenHeads = new Map(),
): Promise<SealResult | undefined> {
  const periodMs = rt.config.LEDGER_CHECKPOINT_PERIOD_MS;
  const closedEnd = periodStartOf(nowMs - rt.config.LEDGER_CHECKPOINT_LAG_MS, periodMs);
  const closedThrough = iso(closedEnd);
  const mark = await rt.ledger.scanMark();
  if (mark !== undefined && mark >= closedThrough) return undefined;
  // One period back: a write stamped in the last period that landed after it was read.
  const from = mark === undefined ? '0000' : iso(Date.parse(mark) - periodMs);
  const changes = await rt.ledger.changesIn(from, closedThrough);
  const byApp = new Map<string, Change[]>();
  for (const app of await rt.ledger.registeredApps()) byApp.set(app, []);
  for (const c of changes) byApp.set(c.appId, [...(byApp.get(c.appId) ?? []), c]);
  const result: SealResult = {
    closedThrough,
    apps: byApp.size,
    sealed: 0,
    resealed: 0,
    refusals: [],
    checkpoints: [],
  };
  const failed: unknown[] = [];
  for (const [appId, appChanges] of byApp) {
    try {
      await sealApp(rt, keys, { appId, changes: appChanges, closedEnd, nowMs, seen }, result);
    } catch (err) {
      failed.push(err);
      rt.log.warn({ err, appId }, 'ledger checkpoint failed; retried on the next pass');
    }
  }
  if (failed.length > 0) throw failed[0];
  await rt.ledger.setScanMark(closedThrough);
  return result;
}

interface AppJob {
  appId: string;
  changes: Change[];
  closedEnd: number;
  nowMs: number;
  seen: SeenHeads;
}

async function sealApp(rt: SealDeps, keys: KeyRing, job: AppJob, result: SealResult) {
  for (let tries = 0; ; tries++) {
    try {
      return await sealAppOnce(rt, keys, job, result);
    } catch (err) {
      if (!(err instanceof Conflict) || tries >= MAX_CONFLICTS) throw err;
    }
  }
}

async function sealAppOnce(rt: SealDeps, keys: KeyRing, job: AppJob, result: SealResult) {
  const { appId } = job;
  const periodMs = rt.config.LEDGER_CHECKPOINT_PERIOD_MS;
  const refuse = (reason: string, periodStart?: string) =>
    result.refusals.push({ appId, ...(periodStart ? { periodStart } : {}), reason });
  let head = await rt.ledger.chainHead(appId);
  const problem = await chainProblem(rt, keys, appId, head, job.seen.get(appId));
  if (problem) return refuse(problem);
  const chainStart = head?.chainStart ?? (await firstPeriodStart(rt, appId, job.changes, periodMs));
  if (!chainStart) return;
  const ctx = { rt, keys, appId, chainStart, nowMs: job.nowMs, result, refuse };

  // Periods sealed before that hold a dispatch that changed since.
  const sealedThrough = head?.sealedThrough ?? chainStart;
  for (const t of await resealTargets(ctx, job.changes, sealedThrough))
    head = await sealPeriod(ctx, t, head, false);

  // Periods closed since the last one sealed (each sealed even when empty).
  let through = head?.sealedThrough ?? chainStart;
  while (Date.parse(through) < job.closedEnd) {
    const end = Math.min(periodStartOf(Date.parse(through), periodMs) + periodMs, job.closedEnd);
    head = await sealPeriod(ctx, { start: through, end: iso(end) }, head, true);
    through = iso(end);
  }
  if (head) job.seen.set(appId, { seq: head.seq, hash: head.hash });
}

/**
 * Why the app's chain must not be extended, if it must not: its newest checkpoint is not
 * authentic, or a checkpoint this process saw earlier is gone or changed.
 */
async function chainProblem(
  rt: SealDeps,
  keys: KeyRing,
  appId: string,
  head: Checkpoint | undefined,
  known: { seq: number; hash: string } | undefined,
): Promise<string | undefined> {
  if (head) {
    const problem = checkpointProblem(head, keys.verifiers);
    if (problem) return `the newest checkpoint (#${head.seq}) is not authentic: ${problem}`;
  }
  if (!known) return undefined;
  const then =
    head && head.seq > known.seq ? await rt.ledger.getCheckpoint(appId, known.seq) : head;
  if (!head || head.seq < known.seq || then?.hash !== known.hash)
    return `checkpoint #${known.seq} seen earlier is gone or changed (the chain now ends at #${head?.seq ?? 0}): checkpoints were removed`;
  return undefined;
}

/** The start of an app's first period: the period of its first dispatch (none: no chain yet). */
async function firstPeriodStart(
  rt: SealDeps,
  appId: string,
  changes: Change[],
  periodMs: number,
): Promise<string | undefined> {
  const first = [await rt.ledger.firstDispatchAt(appId), ...changes.map((c) => c.createdAt)]
    .filter((t): t is string => t !== undefined)
    .sort()[0];
  return first ? iso(periodStartOf(Date.parse(first), periodMs)) : undefined;
}

/**
 * The sealed periods (before `sealedThrough`) that hold a changed dispatch, in time order; a
 * dispatch created before the app's first period gets a period of its own. A change no period
 * record holds is refused.
 */
async function resealTargets(c: Ctx, changes: Change[], sealedThrough: string): Promise<Target[]> {
  const { rt, appId, chainStart } = c;
  const periodMs = rt.config.LEDGER_CHECKPOINT_PERIOD_MS;
  const targets = new Map<string, Target>();
  let last: PeriodPointer | undefined;
  for (const at of [...new Set(changes.map((x) => x.createdAt))].sort()) {
    if (at >= sealedThrough) break;
    if (!last || at < last.periodStart || at >= last.periodEnd)
      last = await rt.ledger.pointerAt(appId, at);
    if (last && at < last.periodEnd) {
      targets.set(last.periodStart, {
        start: last.periodStart,
        end: last.periodEnd,
        pointer: last,
      });
    } else if (at < chainStart) {
      // Created before the app's first period (a producer's clock behind): a period of its own.
      const gridStart = periodStartOf(Date.parse(at), periodMs);
      const start = [iso(gridStart), last?.periodEnd ?? ''].sort().at(-1)!;
      const end = [iso(gridStart + periodMs), chainStart].sort()[0]!;
      targets.set(start, { start, end });
    } else {
      c.refuse(`no sealed period holds dispatches created at ${at}: its period record is missing`);
    }
  }
  return [...targets.values()].sort((a, b) => (a.start < b.start ? -1 : 1));
}

interface Ctx {
  rt: SealDeps;
  keys: KeyRing;
  appId: string;
  chainStart: string;
  nowMs: number;
  result: SealResult;
  refuse: (reason: string, periodStart?: string) => unknown;
}

/** Seals one period with the ledger as it is now; returns the new chain head. */
async function sealPeriod(
  c: Ctx,
  t: Target,
  head: Checkpoint | undefined,
  advance: boolean,
): Promise<Checkpoint | undefined> {
  const { rt, appId } = c;
  const leaves = await rt.ledger.currentLeaves(appId, t.start, t.end);
  const root = merkleRoot(leaves);
  let version = 1;
  let replaces: Checkpoint['replaces'] = null;
  if (t.pointer) {
    const prev = await rt.ledger.getCheckpoint(appId, t.pointer.seq);
    const problem = !prev
      ? `its checkpoint #${t.pointer.seq} is missing`
      : (checkpointProblem(prev, c.keys.verifiers) ??
        (prev.periodStart !== t.start
          ? `checkpoint #${prev.seq} is for another period`
          : undefined));
    if (problem || !prev) {
      c.refuse(problem ?? 'missing checkpoint', t.start);
      return head;
    }
    if (prev.root === root) return head;
    const lost = await lostEntries(rt, prev, leaves);
    if (lost) {
      c.refuse(lost, t.start);
      return head;
    }
    version = prev.version + 1;
    replaces = { seq: prev.seq, root: prev.root };
  }
  const cp = signCheckpoint(c.keys.active, {
    v: 1,
    appId,
    seq: (head?.seq ?? 0) + 1,
    prevHash: head?.hash ?? GENESIS,
    periodStart: t.start,
    periodEnd: t.end,
    version,
    replaces,
    leafCount: leaves.length,
    root,
    chainStart: c.chainStart,
    sealedThrough: advance ? t.end : (head?.sealedThrough ?? c.chainStart),
    periodMs: rt.config.LEDGER_CHECKPOINT_PERIOD_MS,
    lagMs: rt.config.LEDGER_CHECKPOINT_LAG_MS,
    sealedAt: iso(c.nowMs),
    keyId: c.keys.active.kid,
  });
  if ((await rt.ledger.writeCheckpoint(cp, leaves)) === 'conflict') throw new Conflict();
  if (replaces) c.result.resealed++;
  else c.result.sealed++;
  c.result.checkpoints.push(cp);
  return cp;
}

/**
 * Why the ledger no longer holds what `prev` sealed, or undefined when it does: each sealed
 * dispatch is still there, and where its head moved on, its chain is intact and still passes
 * through the head that was sealed.
 */
async function lostEntries(
  rt: SealDeps,
  prev: Checkpoint,
  now: readonly Leaf[],
): Promise<string | undefined> {
  const old = await rt.ledger.readLeaves(prev.appId, prev.periodStart, prev.root);
  if (old.length !== prev.leafCount || merkleRoot(old) !== prev.root)
    return `the stored leaves of checkpoint #${prev.seq} do not match its signed root`;
  const current = new Map(now.map((l) => [l.dispatchId, l]));
  for (const o of old) {
    const n = current.get(o.dispatchId);
    if (!n) return `dispatch ${o.dispatchId}, sealed in checkpoint #${prev.seq}, is gone`;
    if (n.createdAt !== o.createdAt)
      return `dispatch ${o.dispatchId} changed its createdAt since checkpoint #${prev.seq}`;
    if (n.headHash === o.headHash) continue;
    const items = await rt.ledger.dispatchItems(o.dispatchId);
    const head = items[0];
    const chain =
      head && isDispatchHead(head)
        ? checkChain(
            { ...creationOf(head) },
            head.entryHash,
            storedEntries(items.slice(1)),
            head.headHash,
          )
        : ({ ok: false, at: DISPATCH_SK, reason: 'gone' } as const);
    if (!chain.ok)
      return `dispatch ${o.dispatchId}: its chain is broken at ${chain.at} (${chain.reason})`;
    if (!chain.hashes.includes(o.headHash))
      return `dispatch ${o.dispatchId} no longer holds the entries sealed in checkpoint #${prev.seq}`;
  }
  return undefined;
}
