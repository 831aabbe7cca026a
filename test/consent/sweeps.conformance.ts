import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newReferenceId, recordUuid, transactionUuid } from '../../shared/domain/ids.js';
import type {
  StoredPrincipal,
  StoredTransaction,
  UserPointer,
} from '../../shared/domain/consent/model.js';
import type { SweepStores, TimerOrder } from '../../shared/domain/consent/sweep-ports.js';
import { T0, aTransaction, iso } from '../helpers/transactions.js';

/**
 * What every implementation of the sweep ports (shared/domain/consent/sweep-ports.ts) must do,
 * checked on what is stored afterwards. `make` gives the stores and a harness to seed and read
 * the store by domain objects.
 */
export interface SweepHarness {
  stores: SweepStores;
  putPrincipal(p: StoredPrincipal): Promise<void>;
  putTransaction(t: StoredTransaction): Promise<void>;
  putClaim(derivedRef: string, u: UserPointer): Promise<void>;
  putUserPointer(u: UserPointer): Promise<void>;
  /** The stored principal (or claim) at a referenceId, every attribute. */
  principalAt(appId: string, referenceId: string): Promise<Record<string, unknown> | undefined>;
  transactionAt(t: StoredTransaction): Promise<Record<string, unknown> | undefined>;
  userPointer(appId: string, userId: string): Promise<Record<string, unknown> | undefined>;
  hasTimer(t: TimerOrder): Promise<boolean>;
  close(): Promise<void>;
}

export function sweepStoreConformance(name: string, make: () => Promise<SweepHarness>) {
  describe(`sweep stores: ${name}`, () => {
    let h: SweepHarness;
    let n = 0;
    const appId = `app_sweeps${Date.now().toString(36)}`;
    beforeAll(async () => {
      h = await make();
    });
    afterAll(async () => {
      await h?.close();
    });

    async function principal(extra: Partial<StoredPrincipal> = {}): Promise<StoredPrincipal> {
      const p: StoredPrincipal = {
        appId,
        referenceId: newReferenceId(),
        createdAt: iso(T0),
        updatedAt: iso(T0),
        ...extra,
      };
      await h.putPrincipal(p);
      return p;
    }
    async function transaction(
      p: StoredPrincipal,
      states: ('granted' | 'erased')[],
      extra: Partial<StoredTransaction> = {},
    ): Promise<StoredTransaction> {
      const transactionId = transactionUuid(T0 + ++n, p.referenceId);
      const base = aTransaction(states);
      const t: StoredTransaction = {
        ...base,
        appId,
        transactionId,
        referenceId: p.referenceId,
        records: base.records.map((r, i) => ({ ...r, recordId: recordUuid(transactionId, i + 1) })),
        ...extra,
      };
      await h.putTransaction(t);
      return t;
    }

    describe('activity', () => {
      it('reads a principal and nothing for a claim or an unknown referenceId', async () => {
        const p = await principal({ lastActiveAt: iso(T0) });
        expect(await h.stores.activity.readActivity(appId, p.referenceId)).toMatchObject({
          lastActiveAt: iso(T0),
          createdAt: iso(T0),
        });
        expect(await h.stores.activity.readActivity(appId, newReferenceId())).toBeUndefined();
        const claimRef = newReferenceId();
        await h.putClaim(claimRef, {
          appId,
          userId: 'claimed-user',
          referenceId: p.referenceId,
          transactionId: transactionUuid(T0, p.referenceId),
          createdAt: iso(T0),
        });
        expect(await h.stores.activity.readActivity(appId, claimRef)).toBeUndefined();
      });

      it('moves an old activity and removes a warning, but not a recent one', async () => {
        const p = await principal({ lastActiveAt: iso(T0), inactivityWarnedAt: iso(T0 + 1) });
        const s = h.stores.activity;
        expect(await s.touchActivity(appId, p.referenceId, iso(T0 + 10), iso(T0 + 5))).toBe(true);
        const after = await h.principalAt(appId, p.referenceId);
        expect(after?.lastActiveAt).toBe(iso(T0 + 10));
        expect(after).not.toHaveProperty('inactivityWarnedAt');
        // Stored 10 is not before the floor 5, and no warning stands: nothing written.
        expect(await s.touchActivity(appId, p.referenceId, iso(T0 + 20), iso(T0 + 5))).toBe(false);
        expect((await h.principalAt(appId, p.referenceId))?.lastActiveAt).toBe(iso(T0 + 10));
        expect(await s.touchActivity(appId, newReferenceId(), iso(T0), iso(T0))).toBe(false);
      });
    });

    describe('erasure marker', () => {
      it('pages the transactions with full records', async () => {
        const p = await principal();
        const a = await transaction(p, ['erased', 'granted']);
        const b = await transaction(p, ['erased']);
        const seen: string[] = [];
        for await (const page of h.stores.erasure.transactionPages(appId, p.referenceId))
          for (const t of page) {
            seen.push(t.transactionId);
            expect(t.records.every((r) => r.recordId && r.updatedAt)).toBe(true);
          }
        expect(seen.sort()).toEqual([a.transactionId, b.transactionId].sort());
      });

      it('sets erasedAt forward only, and only on an existing principal', async () => {
        const p = await principal();
        const s = h.stores.erasure;
        expect(await s.markErased(appId, p.referenceId, iso(T0 + 2))).toBe(true);
        expect(await s.markErased(appId, p.referenceId, iso(T0 + 1))).toBe(false);
        expect((await h.principalAt(appId, p.referenceId))?.erasedAt).toBe(iso(T0 + 2));
        const gone = newReferenceId();
        expect(await s.markErased(appId, gone, iso(T0))).toBe(false);
        expect(await h.principalAt(appId, gone)).toBeUndefined();
      });
    });

    describe('expiry', () => {
      it('loads a transaction by id and writes a timer', async () => {
        const p = await principal();
        const t = await transaction(p, ['granted']);
        expect(await h.stores.expiry.loadTransaction(appId, t.transactionId)).toMatchObject({
          transactionId: t.transactionId,
          referenceId: p.referenceId,
        });
        expect(
          await h.stores.expiry.loadTransaction(appId, transactionUuid(T0, newReferenceId())),
        ).toBeUndefined();
        const e: TimerOrder = { kind: 'expire', ...t, dueAtMs: T0 + 60_000 };
        expect(await h.hasTimer(e)).toBe(false);
        await h.stores.expiry.putTimer(e);
        expect(await h.hasTimer(e)).toBe(true);
      });
    });

    describe('inactivity', () => {
      it('marks the warning with its timer only while the principal is as seen', async () => {
        const p = await principal({ lastActiveAt: iso(T0) });
        const s = h.stores.inactivity;
        expect(await s.loadPrincipal(appId, p.referenceId)).toMatchObject({
          referenceId: p.referenceId,
        });
        const stale: TimerOrder = { kind: 'inactivity', ...p, dueAtMs: T0 + 120_000 };
        expect(await s.markWarned(appId, p.referenceId, {}, iso(T0 + 1), stale)).toBe(false);
        expect(await h.hasTimer(stale)).toBe(false);
        expect((await h.principalAt(appId, p.referenceId))?.inactivityWarnedAt).toBeUndefined();

        const timer: TimerOrder = { kind: 'inactivity', ...p, dueAtMs: T0 + 180_000 };
        expect(await s.markWarned(appId, p.referenceId, p, iso(T0 + 1), timer)).toBe(true);
        expect(await h.hasTimer(timer)).toBe(true);
        expect((await h.principalAt(appId, p.referenceId))?.inactivityWarnedAt).toBe(iso(T0 + 1));
      });

      it("scans the app's principals, no claims and no other app's", async () => {
        const scanApp = `${appId}scan`;
        const mine = await Promise.all(
          [0, 1, 2].map(async () => {
            const p: StoredPrincipal = {
              appId: scanApp,
              referenceId: newReferenceId(),
              createdAt: iso(T0),
              updatedAt: iso(T0),
            };
            await h.putPrincipal(p);
            return p.referenceId;
          }),
        );
        await h.putClaim(newReferenceId(), {
          appId: scanApp,
          userId: 'scan-claim',
          referenceId: mine[0]!,
          transactionId: transactionUuid(T0, mine[0]),
          createdAt: iso(T0),
        });
        const found: string[] = [];
        for await (const page of h.stores.inactivity.principalPages(scanApp))
          found.push(...page.map((q) => q.referenceId));
        expect(found.sort()).toEqual([...mine].sort());
      });
    });

    describe('scrub', () => {
      it('loads the holdings of a principal, nothing for an unknown one', async () => {
        expect(await h.stores.scrub.loadHoldings(appId, newReferenceId())).toBeUndefined();
        const p = await principal({ userId: 'u-hold', email: 'u@hold.example' });
        const t = await transaction(p, ['erased'], { userId: 'u-hold' });
        const held = await h.stores.scrub.loadHoldings(appId, p.referenceId);
        expect(held?.principal).toMatchObject({ userId: 'u-hold', email: 'u@hold.example' });
        expect(held?.transactions.map((x) => [x.transactionId, x.userId])).toEqual([
          [t.transactionId, 'u-hold'],
        ]);
      });

      it('deletes a user pointer only when it points at the principal', async () => {
        const p = await principal();
        const u: UserPointer = {
          appId,
          userId: `ptr-${n++}`,
          referenceId: p.referenceId,
          transactionId: transactionUuid(T0, p.referenceId),
          createdAt: iso(T0),
        };
        await h.putUserPointer(u);
        const s = h.stores.scrub;
        expect(await s.deleteUserPointer(appId, u.userId, newReferenceId())).toBe(false);
        expect(await h.userPointer(appId, u.userId)).toBeDefined();
        expect(await s.deleteUserPointer(appId, u.userId, p.referenceId)).toBe(true);
        expect(await h.userPointer(appId, u.userId)).toBeUndefined();
      });

      it("replaces a claim's user id by its hash only when it is the principal's", async () => {
        const p = await principal();
        const claimRef = newReferenceId();
        const userId = `claim-${n++}`;
        await h.putClaim(claimRef, {
          appId,
          userId,
          referenceId: p.referenceId,
          transactionId: transactionUuid(T0, p.referenceId),
          createdAt: iso(T0),
        });
        const mark = { at: iso(T0 + 5), userIdHash: 'h1' };
        const s = h.stores.scrub;
        const other = { referenceId: newReferenceId(), userId };
        expect(await s.scrubClaim(appId, claimRef, other, mark)).toBe(false);
        expect((await h.principalAt(appId, claimRef))?.userId).toBe(userId);
        const ours = { referenceId: p.referenceId, userId };
        expect(await s.scrubClaim(appId, claimRef, ours, mark)).toBe(true);
        const claim = await h.principalAt(appId, claimRef);
        expect(claim).not.toHaveProperty('userId');
        expect(claim).toMatchObject({ claimOf: p.referenceId, userIdHash: 'h1' });
      });

      it('removes the identity of the principal and of a transaction at its version', async () => {
        const p = await principal({ userId: 'u-scrub', email: 'u@scrub.example' });
        const t = await transaction(p, ['erased'], { userId: 'u-scrub' });
        const s = h.stores.scrub;
        await expect(
          s.scrubTransaction({ ...t, version: t.version + 1 }, { at: iso(T0 + 9) }),
        ).rejects.toThrow();
        expect((await h.transactionAt(t))?.userId).toBe('u-scrub');
        await s.scrubTransaction(t, { at: iso(T0 + 9), userIdHash: 'h2' });
        const txn = await h.transactionAt(t);
        expect(txn).not.toHaveProperty('userId');
        expect(txn).toMatchObject({ userIdHash: 'h2', scrubbedAt: iso(T0 + 9), version: 2 });

        await s.scrubPrincipal(appId, p.referenceId, { at: iso(T0 + 9), userIdHash: 'h2' });
        const stored = await h.principalAt(appId, p.referenceId);
        expect(stored).not.toHaveProperty('userId');
        expect(stored).not.toHaveProperty('email');
        expect(stored).toMatchObject({ userIdHash: 'h2', scrubbedAt: iso(T0 + 9) });
        await expect(
          s.scrubPrincipal(appId, newReferenceId(), { at: iso(T0 + 9) }),
        ).rejects.toThrow();
      });
    });
  });
}
