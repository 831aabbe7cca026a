import { describe, expect, it } from 'vitest';
import { signingKeys, type KeyRing } from '../signing/keys.js';
import { signCheckpoint } from './checkpoint.js';
import type { Checkpoint, Leaf } from '../domain/ledger/checkpoints.js';
import { creationEntry, type DispatchView } from './evidence.js';
import { GENESIS, chainHash } from '../domain/ledger/hash.js';
import { merkleRoot, sortLeaves } from './merkle.js';
import { LedgerVerifier, type VerifyReport } from './verify.js';

/**
 * The offline verifier over ledgers built here entry by entry (real hashes, real signatures):
 * an honest ledger verifies, and each way a tamperer with write access to the store could
 * change it is reported.
 */

const ring = (seed: string): KeyRing =>
  signingKeys(
    {
      NODE_ENV: 'test',
      SVC_SIGNING_KEY: seed.repeat(64 / seed.length),
      SVC_SIGNING_RETIRED_KEYS: '',
    },
    '/never-read',
  );
const KEYS = ring('11');
const APP = `app_${'A'.repeat(20)}`;
const H = 3_600_000;
const T0 = Date.parse('2026-03-01T00:00:00.000Z');
const iso = (ms: number) => new Date(ms).toISOString();
const clone = <T>(v: T): T => structuredClone(v);

type Loose = Record<string, unknown>;

/** A dispatch made the way the ledger makes one: creation entry, then chained entries. */
class Dispatch {
  view: DispatchView;
  constructor(id: number, createdAtMs: number) {
    const dispatchId = `dsp_${String(id).padStart(26, '0')}`;
    const head = {
      dispatchId,
      eventId: `evt_${id}`,
      event: 'consent.withdrawn',
      appId: APP,
      environment: 'sandbox',
      referenceId: 'SVC-REF-ABCDEFGH',
      createdAt: iso(createdAtMs),
      dispatchedAt: iso(createdAtMs + 5),
      postbackRequired: true,
      postbackDueAt: iso(createdAtMs + H),
      bodySha256: 'b'.repeat(64),
    };
    const entryHash = chainHash(GENESIS, creationEntry(head));
    this.view = {
      ...head,
      deliveryStatus: 'pending',
      attemptCount: 0,
      lastAttemptAt: null,
      nextAttemptAt: null,
      deliveredAt: null,
      complianceFlag: null,
      entryHash,
      headHash: entryHash,
      attempts: [],
      postbacks: [],
      flagHistory: [],
      flagEntries: [],
    } as DispatchView;
  }

  private chain(type: string, body: Loose, extra: Loose = {}) {
    const full = { type, ...extra, ...body, prevHash: this.view.headHash };
    const hash = chainHash(this.view.headHash, full);
    this.view.headHash = hash;
    return { ...body, prevHash: full.prevHash, hash };
  }

  attempt(ok: boolean, atMs: number, deliveryStatus = ok ? 'delivered' : 'pending') {
    const n = this.view.attempts.length + 1;
    const time = iso(atMs);
    this.view.attempts.push(
      this.chain(
        'attempt',
        {
          attempt: n,
          trigger: n === 1 ? 'first' : 'retry',
          time,
          durationMs: 12,
          destination: 'https://hooks.example/in',
          statusCode: ok ? 200 : 503,
          responseExcerpt: ok ? 'ok' : 'busy',
          outcome: ok ? 'delivered' : 'failed',
          deliveryStatus,
        },
        { dispatchId: this.view.dispatchId },
      ),
    );
    Object.assign(this.view, {
      attemptCount: n,
      lastAttemptAt: time,
      deliveryStatus,
      ...(ok && !this.view.deliveredAt ? { deliveredAt: time } : {}),
    });
    return this;
  }

  flag(flag: string, atMs: number) {
    const seq = this.view.flagEntries.length + 1;
    const change = { flag, at: iso(atMs), cause: 'sla_missed' };
    (this.view.flagHistory as Loose[]).push(change);
    this.view.flagEntries.push(
      this.chain('flag', {
        dispatchId: this.view.dispatchId,
        seq,
        previous: this.view.complianceFlag ?? null,
        ...change,
      }),
    );
    this.view.complianceFlag = flag;
    return this;
  }

  leaf(): Leaf {
    return {
      dispatchId: this.view.dispatchId,
      createdAt: this.view.createdAt,
      headHash: this.view.headHash,
    };
  }
}

type Line = Checkpoint & { leaves?: Leaf[] };

/** An app's chain of checkpoints, sealed as the sealer seals (seal.ts). */
class Chain {
  cps: Line[] = [];
  private latest = new Map<string, Line>();
  constructor(private readonly keys: KeyRing = KEYS) {}

  seal(startMs: number, dispatches: Dispatch[], atMs: number, advance = true) {
    const leaves = sortLeaves(dispatches.map((d) => d.leaf()));
    const start = iso(startMs);
    const prev = this.latest.get(start);
    const head = this.cps.at(-1);
    const cp: Line = {
      ...signCheckpoint(this.keys.active, {
        v: 1,
        appId: APP,
        seq: (head?.seq ?? 0) + 1,
        prevHash: head?.hash ?? GENESIS,
        periodStart: start,
        periodEnd: iso(startMs + H),
        version: (prev?.version ?? 0) + 1,
        replaces: prev ? { seq: prev.seq, root: prev.root } : null,
        leafCount: leaves.length,
        root: merkleRoot(leaves),
        chainStart: iso(T0),
        sealedThrough: advance ? iso(startMs + H) : (head?.sealedThrough ?? iso(T0)),
        periodMs: H,
        lagMs: 60_000,
        sealedAt: iso(atMs),
        keyId: this.keys.active.kid,
      }),
      leaves,
    };
    this.cps.push(cp);
    this.latest.set(start, cp);
    return cp;
  }
}

interface Bundle {
  cps: Line[];
  dispatches: DispatchView[];
  from?: string;
  to?: string;
  exportedAt: string;
}

function verify(b: Bundle, keys = KEYS.verifiers): VerifyReport {
  const from = b.from ?? iso(T0);
  const to = b.to ?? iso(T0 + 4 * H);
  const v = new LedgerVerifier(keys, { from, to });
  // Only the checkpoints in force carry leaves in an export.
  const inForce = new Map<string, Line>();
  for (const c of b.cps) inForce.set(c.periodStart, c);
  for (const c of b.cps) {
    const { leaves, ...rest } = c;
    v.addCheckpoint(inForce.get(c.periodStart) === c ? { ...rest, leaves } : rest);
  }
  for (const d of b.dispatches) v.addDispatch(d);
  return v.finish({ exportedAt: b.exportedAt });
}

/**
 * Three hours of an app: a, b in hour 0 (b withdrawn, never confirmed: flagged at_risk then
 * breach in hour 2, so hour 0 is sealed again), c in hour 1, nothing in hour 2.
 */
function honest() {
  const a = new Dispatch(1, T0 + 60_000).attempt(true, T0 + 61_000);
  const b = new Dispatch(2, T0 + 120_000).attempt(false, T0 + 121_000).attempt(true, T0 + 130_000);
  const c = new Dispatch(3, T0 + H + 5_000).attempt(true, T0 + H + 6_000);
  const chain = new Chain();
  chain.seal(T0, [a, b], T0 + H + 60_000); // #1
  chain.seal(T0 + H, [c], T0 + 2 * H + 60_000); // #2
  b.flag('at_risk', T0 + 2 * H + 100_000).flag('breach', T0 + 2 * H + 200_000);
  chain.seal(T0, [a, b], T0 + 3 * H + 60_000, false); // #3: hour 0 again
  chain.seal(T0 + 2 * H, [], T0 + 3 * H + 60_000); // #4: the empty hour
  return { a, b, c, chain, exportedAt: iso(T0 + 3 * H + 120_000) };
}

const bundle = (h: ReturnType<typeof honest>, over: Partial<Bundle> = {}): Bundle => ({
  cps: clone(h.chain.cps),
  dispatches: [h.a, h.b, h.c].map((d) => clone(d.view)),
  exportedAt: h.exportedAt,
  ...over,
});

const reasons = (r: VerifyReport) => r.failures.map((f) => f.reason).join('\n');

describe('LedgerVerifier', () => {
  it('verifies an untampered ledger: every dispatch sealed, nothing failed', () => {
    const r = verify(bundle(honest()));
    expect(reasons(r)).toBe('');
    expect(r).toMatchObject({
      ok: true,
      appId: APP,
      dispatches: 3,
      checkpoints: 4,
      sealed: 3,
      unsealed: [],
      sealedThrough: iso(T0 + 3 * H),
    });
  });

  it('reports entries chained after the last checkpoint as unsealed, not as failures', () => {
    const h = honest();
    h.c.flag('ok', T0 + 3 * H + 90_000);
    const r = verify(bundle(h));
    expect(r.ok).toBe(true);
    expect(r.unsealed).toEqual([
      {
        dispatchId: h.c.view.dispatchId,
        entries: 1,
        reason: 'entries chained after checkpoint #2',
      },
    ]);
    const fresh = new Dispatch(9, T0 + 3 * H + 1_000).attempt(true, T0 + 3 * H + 2_000);
    const r2 = verify(bundle(h, { dispatches: [h.a.view, h.b.view, h.c.view, fresh.view] }));
    expect(r2.ok).toBe(true);
    expect(r2.unsealed.map((u) => u.reason)).toContain('its period is not sealed yet');
  });

  it('fails dispatches and entries still unsealed past the sealing deadline', () => {
    const h = honest();
    // c flagged in hour 2 and hour 2 in #4 without it: nothing resealed hour 1 or holds `late`.
    h.c.flag('ok', T0 + 2 * H + 300_000);
    const late = new Dispatch(8, T0 + 2 * H + 400_000).attempt(true, T0 + 2 * H + 401_000);
    const dispatches = [h.a.view, h.b.view, h.c.view, late.view];
    // Closed for twice the lag and a minute (the sealer's deadline): no longer "not yet".
    const r = verify(bundle(h, { dispatches, exportedAt: iso(T0 + 3 * H + 600_000) }));
    expect(r.ok).toBe(false);
    expect(r.unsealed).toEqual([]);
    expect(r.failures).toEqual([
      expect.objectContaining({ dispatchId: h.c.view.dispatchId }),
      expect.objectContaining({ dispatchId: late.view.dispatchId }),
    ]);
    expect(reasons(r)).toMatch(
      /not sealed: entries chained after checkpoint #2, though written by .* had to be sealed/,
    );
    expect(reasons(r)).toMatch(/not sealed: not in checkpoint #4 of its period/);
    // Right after hour 2 closed, the sealer may still be at work: unsealed, not failed.
    const early = verify(bundle(h, { dispatches, exportedAt: iso(T0 + 3 * H + 60_000) }));
    expect(early.ok).toBe(true);
    expect(early.unsealed).toHaveLength(2);
  });

  it('fails dispatches with no authentic checkpoint at all', () => {
    const h = honest();
    const r = verify(bundle(h, { cps: [] }));
    expect(r.ok).toBe(false);
    expect(reasons(r)).toBe('no authentic checkpoint: nothing vouches for the 3 dispatches');
    const forged = new Chain(ring('22'));
    forged.seal(T0, [h.a, h.b], T0 + H + 60_000);
    expect(reasons(verify(bundle(h, { cps: forged.cps })))).toMatch(
      /no authentic checkpoint: nothing vouches for the 3 dispatches/,
    );
  });

  it('detects the newest entries deleted, even with the chain and head rewritten to match', () => {
    const h = honest();
    const b = clone(h.b.view);
    // What a tamperer does: drop both flag entries, put the head back on the last attempt.
    b.flagHistory = [];
    b.flagEntries = [];
    b.complianceFlag = null;
    b.headHash = String(b.attempts.at(-1)!.hash);
    const r = verify(bundle(h, { dispatches: [h.a.view, b, h.c.view] }));
    expect(r.ok).toBe(false);
    expect(r.failures).toEqual([
      expect.objectContaining({
        dispatchId: b.dispatchId,
        seq: 3,
        reason: expect.stringMatching(/entries sealed in checkpoint #3 are missing or altered/),
      }),
    ]);
  });

  it('detects a flipped flag in the head, and a rewritten, re-chained flag entry', () => {
    const h = honest();
    const headOnly = clone(h.b.view);
    headOnly.complianceFlag = 'ok';
    const r1 = verify(bundle(h, { dispatches: [h.a.view, headOnly, h.c.view] }));
    expect(r1.failures).toEqual([
      expect.objectContaining({
        dispatchId: headOnly.dispatchId,
        at: 'complianceFlag',
        reason: 'complianceFlag is "ok" but its entries say "breach"',
      }),
    ]);

    // The deliberate tamperer also rewrites the last flag entry and recomputes its hash.
    const rewritten = clone(h.b.view);
    const last = rewritten.flagEntries.at(-1)!;
    const body = { type: 'flag', ...last, flag: 'ok' } as Loose;
    delete body.hash;
    last.flag = 'ok';
    last.hash = chainHash(String(last.prevHash), body);
    rewritten.headHash = String(last.hash);
    rewritten.complianceFlag = 'ok';
    const r2 = verify(bundle(h, { dispatches: [h.a.view, rewritten, h.c.view] }));
    expect(r2.failures).toEqual([
      expect.objectContaining({
        dispatchId: rewritten.dispatchId,
        reason: expect.stringMatching(/missing or altered/),
      }),
    ]);
  });

  it('detects a deliveryStatus and attempt count that the attempts do not support', () => {
    const h = honest();
    const d = clone(h.a.view);
    d.deliveryStatus = 'failed';
    d.attemptCount = 3;
    const r = verify(bundle(h, { dispatches: [d, h.b.view, h.c.view] }));
    expect(r.failures.map((f) => f.at)).toEqual(['deliveryStatus', 'attemptCount']);
  });

  it('detects a whole dispatch dropped', () => {
    const h = honest();
    const r = verify(bundle(h, { dispatches: [h.a.view, h.b.view] }));
    expect(r.failures).toEqual([
      {
        dispatchId: h.c.view.dispatchId,
        seq: 2,
        reason: 'sealed in checkpoint #2 but missing from the ledger',
      },
    ]);
    // Outside the range verified, a sealed dispatch is not expected.
    expect(verify(bundle(h, { dispatches: [h.a.view, h.b.view], to: iso(T0 + H) })).ok).toBe(true);
  });

  it('detects a checkpoint removed from the middle of the chain, or altered', () => {
    const h = honest();
    const cps = clone(h.chain.cps);
    const r1 = verify(bundle(h, { cps: [cps[0]!, cps[2]!, cps[3]!] }));
    expect(reasons(r1)).toMatch(/checkpoints #2…#2 are missing/);
    const altered = clone(h.chain.cps);
    altered[1]!.leafCount = 0;
    expect(reasons(verify(bundle(h, { cps: altered })))).toMatch(
      /checkpoint #2: signature does not verify/,
    );
  });

  it('detects the newest checkpoints removed (with the entries they sealed): they stop too early', () => {
    const h = honest();
    // The tamperer removes #3 and #4 and the flags #3 sealed; #1 is in force for hour 0 again.
    const b = clone(h.b.view);
    b.flagHistory = [];
    b.flagEntries = [];
    b.complianceFlag = null;
    b.headHash = String(b.attempts.at(-1)!.hash);
    const cut = { cps: clone(h.chain.cps.slice(0, 2)), dispatches: [h.a.view, b, h.c.view] };
    // Minutes after the sealer's deadline for hour 2 (closed + twice the lag + a minute).
    const r = verify(bundle(h, { ...cut, exportedAt: iso(T0 + 3 * H + 600_000) }));
    expect(reasons(r)).toMatch(/the newest checkpoint \(#2\) seals up to .* had closed/);
    // Right after hour 2 closed, the removal cannot be told from a sealer still at work.
    expect(verify(bundle(h, { ...cut, exportedAt: iso(T0 + 3 * H + 60_000) })).ok).toBe(true);
  });

  it('detects leaves that do not match the signed root', () => {
    const h = honest();
    const cps = clone(h.chain.cps);
    cps[2]!.leaves![0]!.headHash = '0'.repeat(64);
    expect(reasons(verify(bundle(h, { cps })))).toMatch(
      /leaves given for checkpoint #3 do not match its signed root/,
    );
  });

  it('refuses checkpoints signed with a key not among the public keys', () => {
    const h = honest();
    const forged = new Chain(ring('22'));
    forged.seal(T0, [h.a, h.b], T0 + H + 60_000);
    forged.seal(T0 + H, [h.c], T0 + 2 * H + 60_000);
    const r = verify(bundle(h, { cps: forged.cps }));
    expect(reasons(r)).toMatch(/signed with key .* which is not among the public keys/);
  });

  it('detects a period of the range without a checkpoint in force', () => {
    const h = honest();
    // An export that starts the chain after hour 1's only checkpoint (#2).
    const r = verify(bundle(h, { cps: clone(h.chain.cps.slice(2)) }));
    expect(reasons(r)).toMatch(
      new RegExp(
        `no checkpoint covers dispatches created from ${iso(T0 + H)} to ${iso(T0 + 2 * H)}`,
      ),
    );
  });

  it('detects a period sealed again without replacing the version before it', () => {
    const h = honest();
    const chain = new Chain();
    chain.seal(T0, [h.a], T0 + H + 60_000); // #1
    chain.seal(T0 + H, [h.c], T0 + 2 * H + 60_000); // #2
    chain.seal(T0, [h.a, h.b], T0 + 2 * H + 60_000, false); // #3 replaces #1
    const skipping = chain.seal(T0, [h.a, h.b], T0 + 3 * H + 60_000, false); // #4 replaces #3
    // A sealer misled into replacing #1 again (its pointer rewound) would sign this instead:
    Object.assign(
      skipping,
      signCheckpoint(KEYS.active, {
        ...skipping,
        replaces: { seq: 1, root: chain.cps[0]!.root },
        version: 2,
      }),
    );
    const r = verify(
      bundle(h, { cps: chain.cps, exportedAt: iso(T0 + 3 * H + 120_000), to: iso(T0 + 3 * H) }),
    );
    expect(reasons(r)).toMatch(/checkpoint #4 seals .* again but does not replace #3/);
  });
});
