import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import { newEventId, newReferenceId } from '../../shared/domain/ids.js';
import { chainHash } from '../../shared/domain/ledger/hash.js';
import type { Ledger } from '../../shared/ledger/port.js';
import { verifyDispatchChain } from '../../shared/ledger/queries.js';
import type { TransactItem } from '../../shared/storage/outbox/outbox.js';
import {
  dispatchIdFor,
  newDispatchState,
  webhookEndpoint,
  type DispatchState,
} from '../../shared/storage/ledger/dispatches.js';
import type { ComplianceBase } from '../../shared/storage/ledger/postbacks.js';
import type { ComplianceState } from '../../shared/storage/ledger/summary.js';
import { dueEntry } from '../../shared/storage/timers/due.js';

/**
 * What any store behind the `Ledger` port must do (shared/ledger/port.ts), through the port
 * alone: what is written reads back, each record lands once, listings come in event time and
 * page, postbacks and flags land on the chain with their summary, and redaction replaces the
 * body and nothing else.
 */
export interface LedgerSubject {
  ledger: Ledger;
  /** Timer shards the store files due entries under. */
  shards: number;
  /** A consumer's idempotency claim for a postback (it commits with the postback). */
  claim(postbackId: string): TransactItem;
  close(): Promise<void>;
}

const HOUR_MS = 3_600_000;

export function ledgerConformance(name: string, make: () => Promise<LedgerSubject>): void {
  describe(`Ledger conformance: ${name}`, () => {
    let s: LedgerSubject;
    beforeAll(async () => {
      s = await make();
    });
    afterAll(async () => {
      await s?.close();
    });

    const newApp = () => `app_${randomBytes(6).toString('hex')}`;

    function event(
      appId: string,
      o: { createdAt: string; type?: ConsentEvent['type']; referenceId?: string },
    ): ConsentEvent {
      const type = o.type ?? 'consent.granted';
      return {
        id: newEventId(),
        type,
        apiVersion: 'v1',
        createdAt: o.createdAt,
        appId,
        environment: 'sandbox',
        data: {
          referenceId: o.referenceId ?? newReferenceId(),
          userId: 'user-42',
          consentId: randomUUID(),
          sequence: 1,
          recordIds: [randomUUID()],
          purposes: { marketing: type === 'consent.granted' },
          state: { marketing: type === 'consent.granted' ? 'granted' : 'withdrawn' },
          noticeId: null,
          noticeVersion: null,
          expiresAt: null,
          ...(type === 'data.deleted'
            ? {
                postback: {
                  required: true as const,
                  dueAt: new Date(Date.parse(o.createdAt) + HOUR_MS).toISOString(),
                  url: 'http://localhost:8080/api/v1/server/consent/action',
                },
              }
            : {}),
        },
      };
    }

    async function create(e: ConsentEvent, nowMs = Date.now()) {
      return s.ledger.createDispatch({
        event: e,
        body: JSON.stringify(e),
        endpoint: webhookEndpoint(e.appId),
        nowMs,
        due: (id) => dueEntry(id, e.appId, nowMs, 'attempt', s.shards),
      });
    }

    const attempt = (state: DispatchState, status: number) => ({
      state,
      entry: {
        trigger: 'first' as const,
        time: new Date().toISOString(),
        durationMs: 12,
        destination: 'https://hooks.example/in',
        statusCode: status,
        responseExcerpt: status === 200 ? 'ok' : 'not yet',
        outcome: status === 200 ? ('delivered' as const) : ('failed' as const),
      },
      deliveryStatus: status === 200 ? ('delivered' as const) : ('pending' as const),
    });

    it('records a dispatch once and reads it back', async () => {
      const appId = newApp();
      const e = event(appId, { createdAt: new Date().toISOString() });
      const first = await create(e);
      expect(first.result).toBe('recorded');
      expect(first.state.dispatchId).toBe(dispatchIdFor(e.id, webhookEndpoint(appId)));

      const read = await s.ledger.getDispatchState(first.state.dispatchId);
      expect(read).toMatchObject({
        dispatchId: first.state.dispatchId,
        eventId: e.id,
        appId,
        referenceId: e.data.referenceId,
        deliveryStatus: 'pending',
        attempts: 0,
        body: JSON.stringify(e),
        headHash: first.state.entryHash,
        dueSk: first.state.dueSk,
      });

      // The same event again: nothing written, the stored dispatch as it was.
      const again = await create(e, Date.now() + 5_000);
      expect(again.result).toBe('duplicate');
      expect(await s.ledger.getDispatchState(first.state.dispatchId)).toEqual(read);
      expect(await s.ledger.getDispatchState('dsp_unknown')).toBeUndefined();
    });

    it('chains each attempt once, and a re-record of it is a duplicate', async () => {
      const appId = newApp();
      const { state } = await create(event(appId, { createdAt: new Date().toISOString() }));
      const r = await s.ledger.recordAttempt(attempt(state, 503));
      expect(r.result).toBe('recorded');
      expect(r.entry).toMatchObject({ attempt: 1, prevHash: state.headHash, outcome: 'failed' });
      const { hash, ...body } = r.entry;
      expect(hash).toBe(chainHash(state.headHash, body));

      const after = await s.ledger.getDispatchState(state.dispatchId);
      expect(after).toMatchObject({ attempts: 1, headHash: r.entry.hash });
      // No next attempt was given: the due entry is gone.
      expect(after?.dueSk).toBeUndefined();

      const again = await s.ledger.recordAttempt(attempt(state, 503));
      expect(again.result).toBe('duplicate');
      const items = await s.ledger.dispatchItems(state.dispatchId);
      expect(items.map((i) => i.sk)).toEqual(['DSP', 'ATT#001']);
      expect(items[1]).toMatchObject({ attempt: 1, hash: r.entry.hash });
      expect(await verifyDispatchChain(s, state.dispatchId)).toEqual({ ok: true, entries: 2 });

      const second = await s.ledger.recordAttempt(attempt(after!, 200));
      expect(second.result).toBe('recorded');
      expect(second.entry).toMatchObject({ attempt: 2, prevHash: r.entry.hash });
      expect(await s.ledger.getDispatchState(state.dispatchId)).toMatchObject({
        attempts: 2,
        deliveryStatus: 'delivered',
        headHash: second.entry.hash,
      });
      expect(await verifyDispatchChain(s, state.dispatchId)).toEqual({ ok: true, entries: 3 });
    });

    it('commits first attempts with their dispatches, each once', async () => {
      const appId = newApp();
      const nowMs = Date.now();
      const recs = [0, 1].map((i) => {
        const e = event(appId, { createdAt: new Date(nowMs - i * 1000).toISOString() });
        const state = newDispatchState({
          event: e,
          body: JSON.stringify(e),
          endpoint: webhookEndpoint(appId),
          nowMs,
        });
        return s.ledger.firstAttemptRecord({ ...attempt(state, 200), nowMs });
      });
      expect((await s.ledger.recordedDispatches(recs.map((r) => r.dispatchId))).size).toBe(0);
      expect(await s.ledger.commitFirstAttempts(recs)).toEqual({ committed: true });
      for (const rec of recs) {
        expect(await s.ledger.getDispatchState(rec.dispatchId)).toMatchObject({
          attempts: 1,
          deliveryStatus: 'delivered',
          headHash: rec.entry.hash,
        });
        expect(await verifyDispatchChain(s, rec.dispatchId)).toEqual({ ok: true, entries: 2 });
      }
      expect(await s.ledger.commitFirstAttempts(recs)).toEqual({
        committed: false,
        duplicates: new Set([0, 1]),
      });
      const found = await s.ledger.recordedDispatches(recs.map((r) => r.dispatchId));
      expect([...found.keys()].sort()).toEqual(recs.map((r) => r.dispatchId).sort());
    });

    it("lists an app's dispatches in event time, by range and in pages", async () => {
      const appId = newApp();
      const base = Date.parse('2025-06-01T10:00:00.000Z');
      const times = [0, 1, 2, 3].map((i) => new Date(base + i * 60_000).toISOString());
      const ids: string[] = [];
      // Created out of order: the listing follows the events' time, not the writes'.
      for (const t of [times[2]!, times[0]!, times[3]!, times[1]!]) {
        const { state } = await create(event(appId, { createdAt: t }));
        ids[times.indexOf(t)] = state.dispatchId;
      }
      await create(event(newApp(), { createdAt: times[1]! }));

      const all = await s.ledger.readAppDispatches({ appId, want: 10 });
      expect(all.items.map((d) => d.dispatchId)).toEqual(ids);
      expect(all.next).toBeUndefined();
      const desc = await s.ledger.readAppDispatches({ appId, want: 10, desc: true });
      expect(desc.items.map((d) => d.dispatchId)).toEqual([...ids].reverse());

      const page1 = await s.ledger.readAppDispatches({ appId, want: 3 });
      expect(page1.items.map((d) => d.dispatchId)).toEqual(ids.slice(0, 3));
      expect(page1.next).toBeDefined();
      const last = page1.items.at(-1)!;
      const page2 = await s.ledger.readAppDispatches({
        appId,
        want: 3,
        after: `${String(last.createdAt)}#${String(last.dispatchId)}`,
      });
      expect(page2.items.map((d) => d.dispatchId)).toEqual(ids.slice(3));

      const range = await s.ledger.readAppDispatches({
        appId,
        want: 10,
        from: times[1],
        to: times[3],
      });
      expect(range.items.map((d) => d.dispatchId)).toEqual(ids.slice(1, 3));
      expect(range.items[0]).toMatchObject({
        appId,
        createdAt: times[1],
        deliveryStatus: 'pending',
      });
    });

    async function complianceBase(state: ComplianceState): Promise<ComplianceBase> {
      const h = state.head;
      return {
        dispatchId: h.dispatchId,
        appId: h.appId,
        createdAt: h.createdAt,
        event: h.event,
        headHash: h.headHash,
        complianceFlag: (h.complianceFlag ?? null) as ComplianceBase['complianceFlag'],
        awaitingPostback: h.awaitingPostback as boolean | undefined,
        nearDeadline: h.nearDeadline as boolean | undefined,
        flagCount: state.flagCount,
        postbacks: state.postbacks,
        worstFlag: state.worstFlag,
        summaryStored: state.summaryStored,
      };
    }

    it('records postbacks and flags on the chain with their summary and gauges', async () => {
      const appId = newApp();
      const createdAt = new Date().toISOString();
      const e = event(appId, { createdAt, type: 'data.deleted' });
      const { state } = await create(e);
      const gaugesBefore = await s.ledger.readGauges();

      const fresh = await s.ledger.readComplianceState(state.dispatchId);
      expect(fresh).toMatchObject({ postbacks: [], flagCount: 0, worstFlag: null });
      // The SLA check's first evaluation: awaiting its postback.
      const first = await s.ledger.writeCompliance({
        base: await complianceBase(fresh!),
        changes: [],
        gauges: { awaitingPostback: true, nearDeadline: false },
      });
      expect(first).toEqual({ result: 'written', flags: [] });
      const gaugesAwaiting = await s.ledger.readGauges();
      expect(gaugesAwaiting['data.deleted']!.awaiting).toBe(
        gaugesBefore['data.deleted']!.awaiting + 1,
      );

      const awaiting = await s.ledger.readComplianceState(state.dispatchId);
      expect(awaiting).toMatchObject({ summaryStored: true, postbacks: [] });
      const receivedAt = new Date().toISOString();
      const postbackId = `pb_${newEventId().slice(4)}`;
      const message = {
        type: 'postback' as const,
        dispatchId: state.dispatchId,
        referenceId: e.data.referenceId,
        status: 'deleted' as const,
        completedAt: receivedAt,
        risk: 'low' as const,
        tags: ['crm'],
        actions: [{ type: 'delete', result: 'done' }],
        appId,
        postbackId,
        receivedAt,
      };
      const written = await s.ledger.writeCompliance({
        base: await complianceBase(awaiting!),
        postback: { message, claim: s.claim(postbackId) },
        changes: [{ flag: 'ok', previous: null, at: receivedAt, cause: 'postback' }],
        gauges: { awaitingPostback: false, nearDeadline: false },
      });
      expect(written.result).toBe('written');
      if (written.result !== 'written') return;
      expect(written.postback).toMatchObject({ postbackId, prevHash: awaiting!.head.headHash });
      expect(written.flags).toEqual([
        expect.objectContaining({ flag: 'ok', seq: 1, prevHash: written.postback!.hash }),
      ]);

      const done = await s.ledger.readComplianceState(state.dispatchId);
      expect(done).toMatchObject({
        postbacks: [{ postbackId, status: 'deleted', risk: 'low', receivedAt }],
        flagCount: 1,
        lastFlagAt: receivedAt,
        worstFlag: 'ok',
      });
      expect(done!.head).toMatchObject({ complianceFlag: 'ok', headHash: written.flags[0]!.hash });
      expect((await s.ledger.readGauges())['data.deleted']!.awaiting).toBe(
        gaugesBefore['data.deleted']!.awaiting,
      );
      expect(await verifyDispatchChain(s, state.dispatchId)).toEqual({ ok: true, entries: 3 });

      // The same postback again (a redelivery): nothing written.
      expect(
        await s.ledger.writeCompliance({
          base: await complianceBase(done!),
          postback: { message, claim: s.claim(postbackId) },
          changes: [],
          gauges: { awaitingPostback: false, nearDeadline: false },
        }),
      ).toEqual({ result: 'duplicate' });
      // A write planned from a head that has moved on: refused, for the caller to read again.
      const otherId = `pb_${newEventId().slice(4)}`;
      expect(
        await s.ledger.writeCompliance({
          base: await complianceBase(awaiting!),
          postback: { message: { ...message, postbackId: otherId }, claim: s.claim(otherId) },
          changes: [],
          gauges: { awaitingPostback: false, nearDeadline: false },
        }),
      ).toEqual({ result: 'moved' });
      expect((await s.ledger.readComplianceState(state.dispatchId))!.postbacks).toHaveLength(1);
    });

    it("redacts a principal's dispatch bodies and leaves the chain whole", async () => {
      const appId = newApp();
      const referenceId = newReferenceId();
      const mine = [
        await create(event(appId, { createdAt: new Date().toISOString(), referenceId })),
        await create(
          event(appId, { createdAt: new Date().toISOString(), referenceId, type: 'data.deleted' }),
        ),
      ].map((c) => c.state);
      const other = (await create(event(appId, { createdAt: new Date().toISOString() }))).state;

      const listed = await s.ledger.principalDispatches(appId, referenceId);
      expect(listed.map((d) => d.dispatchId).sort()).toEqual(mine.map((d) => d.dispatchId).sort());

      expect(await s.ledger.redactDispatchBodies(appId, referenceId, new Date())).toBe(2);
      for (const d of mine) {
        const read = await s.ledger.getDispatchState(d.dispatchId);
        expect(JSON.parse(read!.body).data.userId).toBeNull();
        expect(JSON.parse(read!.body).id).toBe(d.eventId);
        expect(read!.bodySha256).toBe(d.bodySha256);
        expect(read!.headHash).toBe(d.headHash);
        expect(await verifyDispatchChain(s, d.dispatchId)).toEqual({ ok: true, entries: 1 });
      }
      const untouched = await s.ledger.getDispatchState(other.dispatchId);
      expect(JSON.parse(untouched!.body).data.userId).toBe('user-42');
      // Nothing is left to redact.
      expect(await s.ledger.redactDispatchBodies(appId, referenceId, new Date())).toBe(0);
    });
  });
}
