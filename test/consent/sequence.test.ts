import { describe, expect, it, vi } from 'vitest';
import { AppError } from '../../shared/errors.js';
import { applyOperation } from '../../shared/domain/consent/apply.js';
import { mutateTransaction } from '../../shared/domain/consent/writer.js';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import { loadTransaction } from '../../shared/storage/consents/repository.js';
import { usePublicApi } from './fixture.js';

/**
 * `data.sequence` under concurrency, on DynamoDB Local and the real Kafka: changes racing for
 * one transaction through the domain's writer each number their events from the sequence they
 * read, and only a write whose version condition held lands, so the numbers on Kafka are those
 * of the stored versions, one each, with no gap.
 */
const { pub, capture } = usePublicApi('consent-sequence');

const TYPE_OF: Record<string, ConsentEvent['type']> = {
  grant: 'consent.granted',
  revoke: 'consent.withdrawn',
};

describe('sequence of a transaction’s events', () => {
  it('10 concurrent changes of one purpose: distinct, gap-free, in the order of the stored versions', async () => {
    const made = await capture({ granted: ['essential', 'analytics'] });
    const rt = pub.f.p.rt;
    const first = (await loadTransaction(rt, pub.a.app.appId, made.transactionId))!;
    expect(first.sequence).toBe(2);
    const analytics = first.records.find((r) => r.purpose === 'analytics')!.recordId;

    // Each flips analytics as it finds it, so every write that lands is a change (and an event).
    const ctx = { rt, app: pub.a.app, actor: { source: 'api' as const, credential: 'test' } };
    const flip = () =>
      mutateTransaction(
        ctx,
        () => rt.consents.loadTransaction(pub.a.app.appId, made.transactionId),
        (t, now) => {
          const on = t.records.find((r) => r.recordId === analytics)!.state === 'granted';
          return applyOperation(t.records, on ? 'revoke' : 'grant', now, new Set([analytics]));
        },
      ).then(
        () => 'done',
        (err: unknown) => {
          // Five lost races in a row: 503, nothing written.
          if (err instanceof AppError && err.code === 'SVC_UNAVAILABLE') return 'busy';
          throw err;
        },
      );
    const outcomes = await Promise.all(Array.from({ length: 10 }, flip));
    const done = outcomes.filter((o) => o === 'done').length;
    expect(done).toBeGreaterThanOrEqual(2);

    const stored = (await loadTransaction(rt, pub.a.app.appId, made.transactionId))!;
    // Every change after the creation's entries (one a record): one record, so one event each.
    const changes = stored.history!.slice(first.records.length);
    expect(changes).toHaveLength(done);
    expect(stored.sequence).toBe(2 + changes.length);

    const events = await vi.waitFor(
      () => {
        const byId = new Map(pub.f.eventsOf(made.referenceId).map((e) => [e.id, e] as const));
        expect(byId.size).toBe(stored.sequence);
        return [...byId.values()];
      },
      { timeout: 15_000, interval: 50 },
    );
    // A copy of an event (published twice) carries the same sequence as the first.
    for (const e of pub.f.eventsOf(made.referenceId))
      expect(e.data.sequence).toBe(events.find((x) => x.id === e.id)!.data.sequence);
    const ordered = [...events].sort((x, y) => x.data.sequence - y.data.sequence);
    expect(ordered.map((e) => e.data.sequence)).toEqual(
      Array.from({ length: stored.sequence }, (_, i) => i + 1),
    );
    expect(ordered.slice(0, 2).map((e) => e.type)).toEqual(['consent.created', 'consent.granted']);
    // Event 3 + i is the change of version 2 + i: its type, time and resulting state.
    expect(ordered.slice(2).map((e) => [e.type, e.createdAt, e.data.state.analytics])).toEqual(
      changes.map((h) => [
        TYPE_OF[h.operation],
        h.at,
        h.to === 'granted' ? 'granted' : 'withdrawn',
      ]),
    );
    expect(ordered.at(-1)!.data.state).toEqual({
      essential: 'granted',
      analytics:
        stored.records.find((r) => r.purpose === 'analytics')!.state === 'granted'
          ? 'granted'
          : 'withdrawn',
      marketing: 'withdrawn',
    });
  }, 60_000);
});
