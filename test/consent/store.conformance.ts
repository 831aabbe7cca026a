import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  creationIds,
  creations,
  historyOf,
  withHistory,
} from '../../shared/domain/consent/carried.js';
import {
  planEvents,
  sequencesAfter,
  type ConsentEvent,
} from '../../shared/domain/consent/events.js';
import type {
  RecordChange,
  StoredPrincipal,
  StoredTransaction,
} from '../../shared/domain/consent/model.js';
import type {
  ConsentStore,
  ExtraWrite,
  FirstWrite,
  NewTransactionWrite,
} from '../../shared/domain/consent/store.js';
import { newTransactionId, recordIdsFor } from '../../shared/domain/consent/writer.js';
import { newEventId, newReferenceId } from '../../shared/domain/ids.js';

/** A store under test, and what it published for a principal (in order). */
export interface ConsentStoreHarness {
  store: ConsentStore;
  /** A fresh app id: each test writes under its own. */
  appId(): string;
  eventsOf(referenceId: string): ConsentEvent[];
  close(): Promise<void>;
}

const ACTOR = { source: 'api' as const, credential: 'conformance' };
const BASE_URL = 'https://consents.example';
const DAY_MS = 86_400_000;

/**
 * What every ConsentStore must do, whatever it stores in: the domain's write paths
 * (shared/domain/consent/writer.ts) rely on exactly these outcomes. Modelled on Outpost's
 * drivertest: one suite, run against each adapter (store.dynamo.test.ts).
 */
export function consentStoreConformance(
  name: string,
  makeStore: () => Promise<ConsentStoreHarness>,
): void {
  describe(`ConsentStore conformance: ${name}`, () => {
    let h: ConsentStoreHarness;
    beforeAll(async () => {
      h = await makeStore();
    });
    afterAll(async () => {
      await h?.close();
    });

    const app = (appId: string) => ({
      appId,
      environment: 'sandbox' as const,
      slaTimeScale: 1,
    });

    /** A new transaction of `referenceId`, version 1, as the writer builds one. */
    function newTxn(appId: string, referenceId: string, o: { id?: string; userId?: string } = {}) {
      const transactionId = o.id ?? newTransactionId(referenceId);
      const at = new Date().toISOString();
      const next = recordIdsFor(transactionId);
      const txn: StoredTransaction = {
        appId,
        transactionId,
        referenceId,
        ...(o.userId !== undefined ? { userId: o.userId } : {}),
        processId: null,
        noticeId: null,
        noticeVersion: null,
        language: null,
        source: 'api',
        createdAt: at,
        updatedAt: at,
        expiresAt: new Date(Date.parse(at) + 365 * DAY_MS).toISOString(),
        records: [
          { recordId: next(), purpose: 'analytics', state: 'granted', updatedAt: at },
          { recordId: next(), purpose: 'marketing', state: 'denied', updatedAt: at },
        ],
        version: 1,
        // consent.created and consent.granted (analytics).
        sequence: 2,
        createdBy: ACTOR,
        environment: 'sandbox',
      };
      return txn;
    }

    /** The write of a new transaction with the events its records imply. */
    function creation(txn: StoredTransaction): NewTransactionWrite {
      const changes = creations(txn);
      const now = new Date(txn.createdAt);
      const events = planEvents({
        app: app(txn.appId),
        txn,
        changes,
        created: true,
        now,
        baseUrl: BASE_URL,
        newId: creationIds(txn),
        nextSequence: sequencesAfter(0),
      });
      return {
        txn,
        changes,
        events,
        implied: true,
        timers: { app: app(txn.appId), nowMs: now.getTime() },
      };
    }

    function principalOf(txn: StoredTransaction, extra: Partial<StoredPrincipal> = {}) {
      return {
        appId: txn.appId,
        referenceId: txn.referenceId,
        createdAt: txn.createdAt,
        updatedAt: txn.createdAt,
        lastActiveAt: txn.createdAt,
        ...extra,
      };
    }

    const first = (txn: StoredTransaction, o: Partial<FirstWrite> = {}): FirstWrite => ({
      ...creation(txn),
      principal: principalOf(txn),
      ...o,
    });

    /**
     * `current` with every granted record revoked (`revoke`), or every other one granted
     * (`grant`), as the writer's change makes it: its events numbered on from its sequence.
     */
    function changeAll(current: StoredTransaction, op: 'revoke' | 'grant') {
      const at = new Date().toISOString();
      const moves = (r: StoredTransaction['records'][number]) =>
        op === 'revoke' ? r.state === 'granted' : r.state !== 'granted';
      const to = op === 'revoke' ? ('revoked' as const) : ('granted' as const);
      const changes: RecordChange[] = current.records.filter(moves).map((r) => ({
        recordId: r.recordId,
        purpose: r.purpose,
        from: r.state,
        to,
        operation: op,
      }));
      const next = withHistory(
        {
          ...current,
          history: historyOf(current),
          records: current.records.map((r) => (moves(r) ? { ...r, state: to, updatedAt: at } : r)),
          updatedAt: at,
          version: current.version + 1,
        },
        changes,
        ACTOR,
        at,
      );
      const events = planEvents({
        app: app(current.appId),
        txn: next,
        changes,
        created: false,
        now: new Date(at),
        baseUrl: BASE_URL,
        newId: newEventId,
        nextSequence: sequencesAfter(current.sequence),
      });
      return {
        next: { ...next, sequence: current.sequence + events.length },
        changes,
        events,
        timers: { app: app(current.appId), nowMs: Date.parse(at) },
      };
    }
    const revokeAll = (current: StoredTransaction) => changeAll(current, 'revoke');

    const waitForEvents = (referenceId: string, count: number) =>
      vi.waitFor(
        () => {
          const e = h.eventsOf(referenceId);
          expect(e.length).toBeGreaterThanOrEqual(count);
          return e;
        },
        { timeout: 15_000, interval: 50 },
      );

    it('creates a principal and its first transaction, loaded by id, by referenceId and by record, with its events', async () => {
      const appId = h.appId();
      const txn = newTxn(appId, newReferenceId());
      const w = first(txn);
      const out = await h.store.createFirst(w);
      expect(out).toEqual({ ok: expect.objectContaining({ transactionId: txn.transactionId }) });

      expect(await h.store.loadPrincipal(appId, txn.referenceId)).toMatchObject({
        appId,
        referenceId: txn.referenceId,
      });
      const byId = await h.store.loadTransaction(appId, txn.transactionId);
      expect(byId).toMatchObject({ transactionId: txn.transactionId, version: 1 });
      expect(byId!.records).toEqual(txn.records);
      expect(await h.store.loadTransactionAt(appId, txn.referenceId, txn.transactionId)).toEqual(
        byId,
      );
      expect(await h.store.loadRecordPointer(appId, txn.records[1]!.recordId)).toEqual({
        transactionId: txn.transactionId,
        referenceId: txn.referenceId,
      });
      expect(await h.store.allTransactionIds(appId, txn.referenceId)).toEqual([txn.transactionId]);
      const page = await h.store.listTransactions(appId, txn.referenceId, 10);
      expect(page.items.map((t) => t.transactionId)).toEqual([txn.transactionId]);
      expect(page.nextCursor).toBeNull();

      const events = await waitForEvents(txn.referenceId, 2);
      expect(events.map((e) => [e.id, e.type])).toEqual(w.events.map((e) => [e.id, e.type]));
      // Another app sees none of it.
      expect(await h.store.loadTransaction(h.appId(), txn.transactionId)).toBeUndefined();
    });

    it('refuses a taken referenceId (principal), an existing transaction, and a claimed user', async () => {
      const appId = h.appId();
      const taken = newTxn(appId, newReferenceId());
      expect(await h.store.createFirst(first(taken))).toHaveProperty('ok');
      const again = newTxn(appId, taken.referenceId);
      expect(await h.store.createFirst(first(again))).toEqual({ refused: 'principal' });

      // A user's principal at its derived referenceId; its transaction written again (taking
      // the principal over, as for one left without its transaction) is refused.
      const userId = `u_${newReferenceId()}`;
      const derivedRef = await h.store.derivedReferenceOf(appId, userId);
      const mine = newTxn(appId, derivedRef, { userId });
      const claim = { userId, derivedRef };
      expect(
        await h.store.createFirst(
          first(mine, {
            principal: principalOf(mine, { userId, userTransactionId: mine.transactionId }),
            user: claim,
          }),
        ),
      ).toHaveProperty('ok');
      const retaken = newTxn(appId, derivedRef, { id: mine.transactionId, userId });
      expect(
        await h.store.createFirst(
          first(retaken, {
            principal: principalOf(retaken, { userId, userTransactionId: mine.transactionId }),
            takeOver: { userId, transactionId: mine.transactionId },
            user: claim,
          }),
        ),
      ).toEqual({ refused: 'transaction' });

      // The same user elsewhere (a random referenceId): the user is claimed already.
      const elsewhere = newTxn(appId, newReferenceId(), { userId });
      expect(
        await h.store.createFirst(
          first(elsewhere, { principal: principalOf(elsewhere, { userId }), user: claim }),
        ),
      ).toEqual({ refused: 'user' });
      expect(await h.store.loadPrincipal(appId, elsewhere.referenceId)).toBeUndefined();
      expect(await h.store.loadTransaction(appId, elsewhere.transactionId)).toBeUndefined();
    });

    it('finds a user at its derived referenceId, and through its claim beside another principal', async () => {
      const appId = h.appId();
      const userId = `u_${newReferenceId()}`;
      const derivedRef = await h.store.derivedReferenceOf(appId, userId);
      expect(await h.store.derivedReferenceOf(appId, userId)).toBe(derivedRef);
      expect(await h.store.findUser(appId, userId)).toBeUndefined();
      const mine = newTxn(appId, derivedRef, { userId });
      await h.store.createFirst(
        first(mine, {
          principal: principalOf(mine, {
            userId,
            email: 'a@shop.example',
            userTransactionId: mine.transactionId,
          }),
          user: { userId, derivedRef },
        }),
      );
      const found = await h.store.findUser(appId, userId);
      expect(found?.user).toMatchObject({
        userId,
        referenceId: derivedRef,
        transactionId: mine.transactionId,
      });
      expect(found?.principal).toMatchObject({ email: 'a@shop.example' });

      // Another principal holds the second user's derived referenceId: the user's principal
      // goes elsewhere, with its claim beside it.
      const other = `u_${newReferenceId()}`;
      const otherRef = await h.store.derivedReferenceOf(appId, other);
      expect(await h.store.createFirst(first(newTxn(appId, otherRef)))).toHaveProperty('ok');
      const away = newTxn(appId, newReferenceId(), { userId: other });
      expect(
        await h.store.createFirst(
          first(away, {
            principal: principalOf(away, { userId: other }),
            user: { userId: other, derivedRef: otherRef },
          }),
        ),
      ).toHaveProperty('ok');
      expect((await h.store.findUser(appId, other))?.user).toMatchObject({
        userId: other,
        referenceId: away.referenceId,
        transactionId: away.transactionId,
      });
      expect(await h.store.loadPrincipalKey(appId, otherRef)).not.toHaveProperty('userId');
    });

    it('adds a transaction to an existing principal only', async () => {
      const appId = h.appId();
      const txn = newTxn(appId, newReferenceId());
      await h.store.createFirst(first(txn));
      const second = newTxn(appId, txn.referenceId);
      expect(await h.store.addTransaction(creation(second))).toBe('ok');
      expect((await h.store.allTransactionIds(appId, txn.referenceId)).sort()).toEqual(
        [txn.transactionId, second.transactionId].sort(),
      );
      const nobody = newTxn(appId, newReferenceId());
      expect(await h.store.addTransaction(creation(nobody))).toBe('no-principal');
      expect(await h.store.loadTransaction(appId, nobody.transactionId)).toBeUndefined();
    });

    it('changes a transaction only from the version it was loaded at (compare-and-set), with the events', async () => {
      const appId = h.appId();
      const txn = newTxn(appId, newReferenceId());
      const created = first(txn);
      await h.store.createFirst(created);
      const current = (await h.store.loadTransaction(appId, txn.transactionId))!;
      const change = revokeAll(current);
      expect(await h.store.change({ current, ...change })).toBe('ok');
      const after = (await h.store.loadTransaction(appId, txn.transactionId))!;
      expect(after.version).toBe(2);
      expect(after.records.map((r) => r.state)).toEqual(['revoked', 'denied']);
      expect(after.history?.map((e) => e.operation)).toEqual(['create', 'create', 'revoke']);

      // From the version already replaced: stale, and nothing written.
      expect(await h.store.change({ current, ...revokeAll(current) })).toBe('stale');
      expect((await h.store.loadTransaction(appId, txn.transactionId))!.version).toBe(2);

      // The creation's events and the change's, in order, each once.
      const events = await waitForEvents(txn.referenceId, 3);
      expect(events.map((e) => e.id)).toEqual(
        [...created.events, ...change.events].map((e) => e.id),
      );
    });

    it('races: of changes from one version, one applies and the others are stale or contended', async () => {
      const appId = h.appId();
      const txn = newTxn(appId, newReferenceId());
      await h.store.createFirst(first(txn));
      const current = (await h.store.loadTransaction(appId, txn.transactionId))!;
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () => h.store.change({ current, ...revokeAll(current) })),
      );
      expect(outcomes.filter((o) => o === 'ok')).toHaveLength(1);
      for (const o of outcomes) expect(['ok', 'stale', 'contention']).toContain(o);
      expect((await h.store.loadTransaction(appId, txn.transactionId))!.version).toBe(2);
    });

    it('keeps the sequence a change numbered its events to, and only the winner’s of a race', async () => {
      const appId = h.appId();
      const txn = newTxn(appId, newReferenceId());
      const created = first(txn);
      await h.store.createFirst(created);
      expect(created.events.map((e) => e.data.sequence)).toEqual([1, 2]);
      const current = (await h.store.loadTransaction(appId, txn.transactionId))!;
      expect(current.sequence).toBe(2);

      // Racing changes from one version all number their event 3; one write lands.
      const racing = Array.from({ length: 4 }, () => revokeAll(current));
      const outcomes = await Promise.all(racing.map((c) => h.store.change({ current, ...c })));
      const won = racing[outcomes.indexOf('ok')]!;
      const after = (await h.store.loadTransaction(appId, txn.transactionId))!;
      expect(after.sequence).toBe(3);

      // The next change, from the stored version, numbers on from the stored sequence.
      const granted = changeAll(after, 'grant');
      expect(granted.events.map((e) => e.data.sequence)).toEqual([4]);
      expect(await h.store.change({ current: after, ...granted })).toBe('ok');
      expect((await h.store.loadTransaction(appId, txn.transactionId))!.sequence).toBe(4);

      // Published: 1 to 4, each once, the race's winner as 3 and none of the losers.
      const events = await waitForEvents(txn.referenceId, 4);
      expect(events.map((e) => [e.id, e.data.sequence])).toEqual([
        ...created.events.map((e) => [e.id, e.data.sequence]),
        [won.events[0]!.id, 3],
        [granted.events[0]!.id, 4],
      ]);
    });

    it('writes extra principal writes with the change, and names the refused one', async () => {
      const appId = h.appId();
      const txn = newTxn(appId, newReferenceId());
      await h.store.createFirst(first(txn));
      const at = new Date().toISOString();
      const link: ExtraWrite = {
        write: {
          op: 'link-user',
          referenceId: txn.referenceId,
          userId: 'u_linked',
          email: 'l@shop.example',
          at,
        },
        conflict: 'linked to another user',
      };
      const current = (await h.store.loadTransaction(appId, txn.transactionId))!;
      expect(await h.store.change({ current, ...revokeAll(current), extras: [link] })).toBe('ok');
      expect(await h.store.loadPrincipal(appId, txn.referenceId)).toMatchObject({
        userId: 'u_linked',
        email: 'l@shop.example',
      });

      // Linked already: the link is refused, and so is the whole change.
      const now = (await h.store.loadTransaction(appId, txn.transactionId))!;
      const missing: ExtraWrite = {
        write: { op: 'mark-erased', referenceId: newReferenceId(), at },
      };
      expect(
        await h.store.change({ current: now, ...revokeAll(now), extras: [missing, link] }),
      ).toEqual({ conflict: 1 });
      // A refused extra that names no conflict reads as a stale change.
      expect(await h.store.change({ current: now, ...revokeAll(now), extras: [missing] })).toBe(
        'stale',
      );
      expect((await h.store.loadTransaction(appId, txn.transactionId))!.version).toBe(2);
    });
  });
}
