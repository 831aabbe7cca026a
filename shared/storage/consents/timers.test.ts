import { describe, expect, it } from 'vitest';
import { T0, aTransaction, iso } from '../../../test/helpers/transactions.js';
import type { RecordChange, StoredTransaction } from '../../domain/consent/model.js';
import { DAY_MS } from '../../domain/consent/timers.js';
import { expireTimerItem, expiryEntry, timerItems, withFirstTimer } from './timers.js';

const txn = aTransaction;

const rt = { config: { TIMER_SHARDS: 4 }, tables: { timers: 'timers' } };

describe('timerItems', () => {
  const kinds = (items: ReturnType<typeof timerItems>) =>
    items.map((i) => [i.Put!.Item!.kind, i.Put!.Item!.dueAt]);
  const erase = (n: number): RecordChange[] =>
    Array.from({ length: n }, (_, i) => ({
      recordId: `r${i}`,
      purpose: `p${i}`,
      from: 'granted',
      to: 'erased',
      operation: 'erase',
    }));

  const first = (t: StoredTransaction, nowMs: number, reminderDaysBefore?: number) => {
    const carried = withFirstTimer(rt, { slaTimeScale: 1 }, t, nowMs, reminderDaysBefore);
    return [carried.duekind, carried.duesk!.slice(0, carried.duesk!.indexOf('#'))];
  };

  it('writes no timer item for a new transaction: it carries its reminder itself', () => {
    expect(
      timerItems(rt, { slaTimeScale: 1 }, txn(['granted']), {
        created: true,
        changes: [],
        nowMs: T0,
      }),
    ).toEqual([]);
    const t = txn(['granted']);
    const carried = withFirstTimer(rt, { slaTimeScale: 1 }, t, T0);
    // Exactly the keys the reminder would have in the timers table, and nothing else changed.
    const k = expiryEntry('reminder', t, T0 + 335 * DAY_MS, 4);
    expect(carried).toEqual({ ...t, duepk: k.pk, duesk: k.sk, duekind: 'reminder' });
    expect(k.sk).toBe(`${iso(T0 + 335 * DAY_MS)}#reminder:app_x:0190-txn`);
  });

  it('the reminder schedules the expiry when it fires', () => {
    expect(kinds([expireTimerItem(rt, { slaTimeScale: 1 }, txn(['granted']), T0)])).toEqual([
      ['expire', iso(T0 + 365 * DAY_MS)],
    ]);
    // Fired late, the expiry is not scheduled in the past.
    const late = T0 + 400 * DAY_MS;
    expect(kinds([expireTimerItem(rt, { slaTimeScale: 1 }, txn(['granted']), late)])).toEqual([
      ['expire', iso(late)],
    ]);
  });

  it('gives a new transaction without a reminder its expiry at once', () => {
    expect(first(txn(['granted']), T0, 0)).toEqual(['expire', iso(T0 + 365 * DAY_MS)]);
    expect(first(txn(['granted'], 20), T0)).toEqual(['expire', iso(T0 + 20 * DAY_MS)]);
    expect(first(txn(['granted']), T0)).toEqual(['reminder', iso(T0 + 335 * DAY_MS)]);
  });

  it('schedules the erasure sweep 30 days (compressed) after the erase of the last live record', () => {
    const now = T0 + 1000;
    expect(
      kinds(
        timerItems(rt, { slaTimeScale: 86_400 }, txn(['erased', 'erased']), {
          created: false,
          changes: erase(1),
          nowMs: now,
        }),
      ),
    ).toEqual([['scrub', iso(now + 30_000)]]);
    expect(
      timerItems(rt, { slaTimeScale: 1 }, txn(['erased', 'granted']), {
        created: false,
        changes: erase(1),
        nowMs: now,
      }),
    ).toEqual([]);
  });

  it('never schedules in the past', () => {
    const late = T0 + 400 * DAY_MS;
    expect(first(txn(['granted']), late)).toEqual(['reminder', iso(late)]);
  });
});
