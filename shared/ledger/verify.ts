import type { KeyObject } from 'node:crypto';
import { periodStartOf } from '../storage/ledger/changes.js';
import { checkpointProblem } from './checkpoint.js';
import { latestOverlapping, type Checkpoint, type Leaf } from '../domain/ledger/checkpoints.js';
import { checkViewChain, viewHeadProblems, type DispatchView } from './evidence.js';
import { leafKey, merkleRoot } from './merkle.js';

/**
 * Verifying a ledger export against signed checkpoints, pure and streaming: the ledger API
 * runs it over what it reads, `npm run ledger:verify` over an export file with nothing but the
 * public keys. Checkpoints come first (so the leaves are known), then dispatches one at a time.
 *
 * What fails verification:
 * - a checkpoint not signed by a listed key, or not linked to the one before it (a missing or
 *   altered checkpoint), or a period sealed again without naming the version before it;
 * - a range of time in which dispatches should be sealed but no checkpoint in force covers it,
 *   or checkpoints that stop well before the export was made (the newest ones were removed);
 * - leaves that do not hash to their checkpoint's signed root;
 * - a dispatch whose chain is broken, or whose head fields (complianceFlag, deliveryStatus,
 *   attempt count and times) disagree with its entries;
 * - a dispatch whose chain no longer passes through the head its checkpoint sealed (entries
 *   deleted or rewritten), and a sealed dispatch missing from the export altogether.
 * - a dispatch, or entries of one, not sealed by any checkpoint though written before the
 *   sealing deadline: periods closed for twice the checkpoints' lag and a minute when read.
 * Entries chained after the newest checkpoint of their period, and dispatches of periods not
 * sealed yet, written since that deadline, are reported as unsealed: nothing vouches for them
 * yet. The period and lag come from the newest authentic checkpoint; only a verifier that is
 * the service itself (the ledger API) passes its own for a ledger with no checkpoint yet.
 */

export interface Finding {
  dispatchId?: string;
  /** The checkpoint concerned. */
  seq?: number;
  /** Where in the dispatch (DSP, attempts[1], complianceFlag, …). */
  at?: string;
  reason: string;
}

export interface UnsealedDispatch {
  dispatchId: string;
  reason: string;
  /** Entries chained after the sealed head. */
  entries?: number;
}

export interface VerifyReport {
  ok: boolean;
  appId: string | null;
  from: string;
  to: string;
  dispatches: number;
  checkpoints: number;
  /** Every period of the app up to this instant had been sealed (the newest checkpoint says). */
  sealedThrough: string | null;
  /** Dispatches whose every entry is vouched for by a checkpoint. */
  sealed: number;
  failures: Finding[];
  unsealed: UnsealedDispatch[];
}

export interface Scope {
  /** Event createdAt range of the dispatches given: from inclusive, to exclusive. */
  from: string;
  to: string;
  /** Only this dispatch was given (the range then spans its createdAt alone). */
  dispatchId?: string;
}

type CheckpointLine = Checkpoint & { leaves?: Leaf[] };
type Pending = UnsealedDispatch & { writtenAt: number };

const short = (h: string) => `${h.slice(0, 12)}…`;

/** Slack given to the sealer beyond twice its lag before checkpoints count as missing. */
export const SEALER_GRACE_MS = 60_000;

/** The latest time the service stamped on a dispatch or its entries (epoch ms; NaN ignored). */
function lastWrite(d: DispatchView): number {
  const times = [
    d.createdAt,
    d.dispatchedAt,
    ...d.attempts.map((a) => a.time),
    ...d.postbacks.map((p) => p.receivedAt),
    ...d.flagEntries.map((f) => f.at),
  ]
    .map((t) => (typeof t === 'string' ? Date.parse(t) : NaN))
    .filter((t) => !Number.isNaN(t));
  return Math.max(0, ...times);
}

export class LedgerVerifier {
  private readonly given: CheckpointLine[] = [];
  private prepared = false;
  private readonly failures: Finding[] = [];
  private readonly unsealed: Pending[] = [];
  private valid: CheckpointLine[] = [];
  private inForce: CheckpointLine[] = [];
  private readonly leaves = new Map<string, { leaf: Leaf; cp: CheckpointLine }>();
  private readonly seen = new Set<string>();
  private appId: string | null = null;
  private count = 0;
  private sealed = 0;

  constructor(
    private readonly keys: ReadonlyMap<string, KeyObject>,
    private readonly scope: Scope,
  ) {}

  addCheckpoint(line: object): void {
    if (this.prepared) {
      this.fail({ reason: 'a checkpoint line comes after the dispatches (not an export)' });
      return;
    }
    this.given.push(line as unknown as CheckpointLine);
  }

  addDispatch(d: DispatchView): void {
    this.prepare();
    this.count++;
    const id = d.dispatchId;
    if (this.seen.has(id)) return this.fail({ dispatchId: id, reason: 'listed twice' });
    this.seen.add(id);
    if (this.appId !== null && d.appId !== this.appId)
      this.fail({ dispatchId: id, reason: `belongs to ${String(d.appId)}, not ${this.appId}` });
    const chain = checkViewChain(d);
    if (!chain.ok)
      this.fail({ dispatchId: id, at: chain.at, reason: `chain broken: ${chain.reason}` });
    for (const p of viewHeadProblems(d))
      this.fail({
        dispatchId: id,
        at: p.field,
        reason: `${p.field} is ${JSON.stringify(p.stored)} but its entries say ${JSON.stringify(p.fromEntries)}`,
      });
    const sealed = this.leaves.get(id);
    if (!sealed) {
      const period = this.inForce.find(
        (c) => c.periodStart <= d.createdAt && d.createdAt < c.periodEnd,
      );
      this.unsealed.push({
        dispatchId: id,
        writtenAt: lastWrite(d),
        reason: period
          ? `not in checkpoint #${period.seq} of its period (created after it was sealed)`
          : 'its period is not sealed yet',
      });
      return;
    }
    const { leaf, cp } = sealed;
    if (leaf.createdAt !== d.createdAt)
      return this.fail({
        dispatchId: id,
        seq: cp.seq,
        reason: `createdAt is ${d.createdAt} but checkpoint #${cp.seq} sealed it as ${leaf.createdAt}`,
      });
    if (!chain.ok) return;
    const at = chain.hashes.indexOf(leaf.headHash);
    if (at < 0)
      return this.fail({
        dispatchId: id,
        seq: cp.seq,
        reason: `entries sealed in checkpoint #${cp.seq} are missing or altered (its sealed head ${short(leaf.headHash)} is not on the chain)`,
      });
    const after = chain.hashes.length - 1 - at;
    if (after > 0)
      this.unsealed.push({
        dispatchId: id,
        writtenAt: lastWrite(d),
        entries: after,
        reason: `entries chained after checkpoint #${cp.seq}`,
      });
    else this.sealed++;
  }

  finish(o: { exportedAt: string; periodMs?: number; lagMs?: number }): VerifyReport {
    this.prepare();
    const { from, to, dispatchId } = this.scope;
    for (const [id, { leaf, cp }] of this.leaves) {
      if (this.seen.has(id) || leaf.createdAt < from || leaf.createdAt >= to) continue;
      if (dispatchId !== undefined && id !== dispatchId) continue;
      this.fail({
        dispatchId: id,
        seq: cp.seq,
        reason: `sealed in checkpoint #${cp.seq} but missing from the ledger`,
      });
    }
    const newest = this.valid.at(-1);
    const periodMs = newest ? newest.periodMs : o.periodMs;
    const lagMs = newest ? newest.lagMs : o.lagMs;
    let unsealed = this.unsealed.map(({ writtenAt: _w, ...u }) => u);
    if (periodMs && lagMs !== undefined) {
      // A period is sealed once closed for lagMs; the sealer gets as long again, and a minute.
      const dueMs = periodStartOf(Date.parse(o.exportedAt) - 2 * lagMs - SEALER_GRACE_MS, periodMs);
      const due = new Date(dueMs).toISOString();
      unsealed = [];
      for (const { writtenAt, ...u } of this.unsealed) {
        if (writtenAt >= dueMs) unsealed.push(u);
        else
          this.fail({
            dispatchId: u.dispatchId,
            reason: `not sealed: ${u.reason}, though written by ${new Date(writtenAt).toISOString()} and everything written before ${due} had to be sealed when this was read`,
          });
      }
      if (newest && newest.sealedThrough < due)
        this.fail({
          seq: newest.seq,
          reason: `the newest checkpoint (#${newest.seq}) seals up to ${newest.sealedThrough}, but periods up to ${due} had closed when this was read: checkpoints are missing or the sealer is not running`,
        });
    } else if (this.count > 0) {
      this.fail({
        reason: `no authentic checkpoint: nothing vouches for the ${this.count} dispatches`,
      });
    }
    return {
      ok: this.failures.length === 0,
      appId: this.appId,
      from,
      to,
      dispatches: this.count,
      checkpoints: this.given.length,
      sealedThrough: newest?.sealedThrough ?? null,
      sealed: this.sealed,
      failures: this.failures,
      unsealed,
    };
  }

  /** The checkpoint in force that sealed this dispatch, and its leaf (after the checkpoints). */
  sealOf(dispatchId: string): { leaf: Leaf; checkpoint: Checkpoint } | undefined {
    this.prepare();
    const s = this.leaves.get(dispatchId);
    if (!s) return undefined;
    const { leaves: _leaves, ...checkpoint } = s.cp;
    return { leaf: s.leaf, checkpoint };
  }

  private fail(f: Finding) {
    this.failures.push(f);
  }

  /** Checks the checkpoints once, before the first dispatch. */
  private prepare() {
    if (this.prepared) return;
    this.prepared = true;
    const all = [...this.given].sort((a, b) => a.seq - b.seq);
    for (const c of all) {
      const problem = checkpointProblem(c, this.keys);
      if (problem) this.fail({ seq: c.seq, reason: `checkpoint #${c.seq}: ${problem}` });
      else this.valid.push(c);
    }
    const apps = new Set(this.valid.map((c) => c.appId));
    if (apps.size > 1)
      this.fail({ reason: `checkpoints of several apps: ${[...apps].join(', ')}` });
    this.appId = this.valid[0]?.appId ?? null;
    for (let i = 1; i < all.length; i++) {
      const [a, b] = [all[i - 1]!, all[i]!];
      if (b.seq !== a.seq + 1)
        this.fail({ seq: b.seq, reason: `checkpoints #${a.seq + 1}…#${b.seq - 1} are missing` });
      else if (b.prevHash !== a.hash)
        this.fail({ seq: b.seq, reason: `checkpoint #${b.seq} does not link to #${a.seq}` });
    }
    this.checkVersions();
    this.inForce = latestOverlapping(this.valid, this.scope.from, this.scope.to);
    this.checkCoverage();
    for (const c of this.inForce) this.indexLeaves(c);
  }

  /** Each later seal of a period names the one before it; the one in force reaches back. */
  private checkVersions() {
    const first = this.valid[0]?.seq ?? 0;
    const byPeriod = new Map<string, CheckpointLine[]>();
    for (const c of this.valid)
      byPeriod.set(c.periodStart, [...(byPeriod.get(c.periodStart) ?? []), c]);
    for (const versions of byPeriod.values()) {
      versions.forEach((c, i) => {
        const before = versions[i - 1];
        if (before) {
          if (
            c.replaces?.seq !== before.seq ||
            c.replaces.root !== before.root ||
            c.version !== before.version + 1
          )
            this.fail({
              seq: c.seq,
              reason: `checkpoint #${c.seq} seals ${c.periodStart} again but does not replace #${before.seq}, the version before it`,
            });
          if (c.periodEnd !== before.periodEnd)
            this.fail({ seq: c.seq, reason: `checkpoint #${c.seq} changes the end of its period` });
        } else if (c.replaces && c.replaces.seq >= first) {
          this.fail({
            seq: c.seq,
            reason: `checkpoint #${c.seq} replaces #${c.replaces.seq}, which did not seal this period`,
          });
        }
      });
      const last = versions.at(-1)!;
      const overlaps = last.periodStart < this.scope.to && last.periodEnd > this.scope.from;
      if (overlaps && last.replaces && last.replaces.seq < first)
        this.fail({
          seq: last.seq,
          reason: `checkpoint #${last.seq} replaces #${last.replaces.seq}, which is not in the export`,
        });
    }
  }

  /** Checkpoints in force must cover the sealed part of the range, without gaps or overlaps. */
  private checkCoverage() {
    const newest = this.valid.at(-1);
    if (!newest) return;
    const lo = [this.scope.from, newest.chainStart].sort().at(-1)!;
    const hi = [this.scope.to, newest.sealedThrough].sort()[0]!;
    let cursor = lo;
    let prevEnd = '';
    for (const c of this.inForce) {
      if (c.periodStart < prevEnd)
        this.fail({ seq: c.seq, reason: `checkpoint #${c.seq} overlaps another period` });
      prevEnd = c.periodEnd;
      if (c.periodStart > cursor && cursor < hi)
        this.fail({
          reason: `no checkpoint covers dispatches created from ${cursor} to ${[c.periodStart, hi].sort()[0]}`,
        });
      if (c.periodEnd > cursor) cursor = c.periodEnd;
    }
    if (cursor < hi)
      this.fail({ reason: `no checkpoint covers dispatches created from ${cursor} to ${hi}` });
  }

  private indexLeaves(c: CheckpointLine) {
    const leaves = c.leaves;
    if (!Array.isArray(leaves)) {
      this.fail({ seq: c.seq, reason: `the leaves of checkpoint #${c.seq} are not in the export` });
      return;
    }
    const sorted = leaves.every((l, i) => i === 0 || leafKey(leaves[i - 1]!) < leafKey(l));
    const inside = leaves.every((l) => l.createdAt >= c.periodStart && l.createdAt < c.periodEnd);
    if (leaves.length !== c.leafCount || !sorted || !inside || merkleRoot(leaves) !== c.root) {
      this.fail({
        seq: c.seq,
        reason: `the leaves given for checkpoint #${c.seq} do not match its signed root`,
      });
      return;
    }
    for (const leaf of leaves) this.leaves.set(leaf.dispatchId, { leaf, cp: c });
  }
}
