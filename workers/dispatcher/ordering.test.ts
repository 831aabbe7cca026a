import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import type { DispatchState } from '../../shared/storage/ledger/dispatches.js';
import type { DueEntry } from '../../shared/storage/timers/due.js';
import { memoryPrincipalLanes } from '../../shared/domain/webhook-ordering.js';
import { dispatcherMetrics } from './metrics.js';
import { PrincipalOrder } from './ordering.js';

/** The ordering logic on the in-memory lanes and a ledger of dispatch states in a map. */
function setup() {
  const states = new Map<string, Partial<DispatchState>>();
  const moved: DueEntry[] = [];
  const woken: DueEntry[] = [];
  let now = 1_000_000;
  const metrics = dispatcherMetrics(new Registry());
  const lanes = memoryPrincipalLanes(() => now);
  const order = new PrincipalOrder({
    lanes,
    ledger: {
      getDispatchState: async (id) => states.get(id) as DispatchState | undefined,
      moveDispatchDue: async (from, to) => {
        const s = states.get(from.dispatchId);
        if (s?.dueSk !== from.sk) return false;
        s.dueSk = to.sk;
        moved.push(to);
        return true;
      },
    },
    shards: 4,
    metrics,
    onDue: (e) => woken.push(e),
    now: () => now,
  });
  const dispatch = (id: string, status: DispatchState['deliveryStatus'] = 'pending') => {
    states.set(id, { dispatchId: id, appId: 'app_o', deliveryStatus: status, dueSk: `old#${id}` });
    return { appId: 'app_o', referenceId: 'REF-1', dispatchId: id };
  };
  const held = async () =>
    (await metrics.ordering.get()).values.find((v) => v.labels.step === 'held')?.value ?? 0;
  return { states, moved, woken, order, lanes, dispatch, held, tick: (ms: number) => (now += ms) };
}

describe('per-principal order', () => {
  it('the first dispatch heads the lane; later ones are held behind it, in order', async () => {
    const t = setup();
    const a = t.dispatch('dsp_a');
    const b = t.dispatch('dsp_b');
    const c = t.dispatch('dsp_c');
    expect(await t.order.place(a)).toBe('head');
    expect(await t.order.place(b)).toBe('held');
    expect(await t.order.place(c)).toBe('held');
    // Asking again changes nothing.
    expect(await t.order.place(b)).toBe('held');
    expect(await t.order.place(a)).toBe('head');
    expect(await t.lanes.read('app_o', 'REF-1')).toMatchObject({
      head: 'dsp_a',
      held: ['dsp_b', 'dsp_c'],
    });
    expect(await t.held()).toBe(2);
  });

  it('releasing the settled head makes the next held one due now, and only that one', async () => {
    const t = setup();
    const [a, b, c] = ['dsp_a', 'dsp_b', 'dsp_c'].map((id) => t.dispatch(id));
    await t.order.place(a!);
    await t.order.place(b!);
    await t.order.place(c!);
    // Not the head: nothing moves.
    await t.order.release(c!);
    expect(t.woken).toEqual([]);
    t.states.get('dsp_a')!.deliveryStatus = 'delivered';
    await t.order.release(a!);
    expect(t.woken.map((e) => e.dispatchId)).toEqual(['dsp_b']);
    expect(t.woken[0]!.dueAt).toBe(new Date(1_000_000).toISOString());
    expect(await t.order.place(b!)).toBe('head');
    expect(await t.order.place(c!)).toBe('held');
  });

  it('a dispatch held before its record exists goes once written, when the release came first', async () => {
    const t = setup();
    const a = t.dispatch('dsp_a');
    const b = { appId: 'app_o', referenceId: 'REF-1', dispatchId: 'dsp_b' };
    await t.order.place(a);
    expect(await t.order.place(b)).toBe('held');
    // The head settles and is released before b's record is written: the wake finds nothing.
    t.states.get('dsp_a')!.deliveryStatus = 'delivered';
    await t.order.release(a);
    expect(t.woken).toEqual([]);
    // b's record lands (due at the recheck); the look after the write makes it due now.
    t.dispatch('dsp_b');
    await t.order.written(b);
    expect(t.woken.map((e) => e.dispatchId)).toEqual(['dsp_b']);
    // Written while still behind a pending head, it stays held.
    const c = { appId: 'app_o', referenceId: 'REF-1', dispatchId: 'dsp_c' };
    expect(await t.order.place(c)).toBe('held');
    t.dispatch('dsp_c');
    await t.order.written(c);
    expect(t.woken.map((e) => e.dispatchId)).toEqual(['dsp_b']);
  });

  it('a head found settled by a later look (its release lost) is moved past', async () => {
    const t = setup();
    const a = t.dispatch('dsp_a');
    const b = t.dispatch('dsp_b');
    await t.order.place(a);
    await t.order.place(b);
    t.states.get('dsp_a')!.deliveryStatus = 'failed';
    const lane = await t.order.current('app_o', 'REF-1');
    expect(lane).toMatchObject({ head: 'dsp_b', held: [] });
    expect(t.woken.map((e) => e.dispatchId)).toEqual(['dsp_b']);
    // b settles too: the lane goes, and a new dispatch heads a new one.
    t.states.get('dsp_b')!.deliveryStatus = 'delivered';
    expect(await t.order.current('app_o', 'REF-1')).toBeUndefined();
    expect(await t.order.place(t.dispatch('dsp_c'))).toBe('head');
  });

  it('a head not in the ledger yet counts as pending for a grace, then as gone', async () => {
    const t = setup();
    await t.order.place({ appId: 'app_o', referenceId: 'REF-1', dispatchId: 'dsp_unwritten' });
    expect(await t.order.place(t.dispatch('dsp_b'))).toBe('held');
    t.tick(60_000);
    expect((await t.order.current('app_o', 'REF-1'))?.head).toBe('dsp_unwritten');
    t.tick(61_000);
    expect((await t.order.current('app_o', 'REF-1'))?.head).toBe('dsp_b');
  });

  it('a settled held dispatch is not woken; the next look moves past it', async () => {
    const t = setup();
    const [a, b, c] = ['dsp_a', 'dsp_b', 'dsp_c'].map((id) => t.dispatch(id));
    await t.order.place(a!);
    await t.order.place(b!);
    await t.order.place(c!);
    t.states.get('dsp_b')!.deliveryStatus = 'delivered';
    t.states.get('dsp_a')!.deliveryStatus = 'delivered';
    await t.order.release(a!);
    expect(t.woken).toEqual([]);
    expect((await t.order.current('app_o', 'REF-1'))?.head).toBe('dsp_c');
    expect(t.woken.map((e) => e.dispatchId)).toEqual(['dsp_c']);
  });

  it('inTurn runs one principal’s work one at a time, and other principals’ beside it', async () => {
    const t = setup();
    const log: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = t.order.inTurn('app_o', 'REF-1', async () => {
      log.push('1 start');
      await gate;
      log.push('1 end');
    });
    const second = t.order.inTurn('app_o', 'REF-1', async () => void log.push('2'));
    const other = t.order.inTurn('app_o', 'REF-2', async () => void log.push('other'));
    await other;
    expect(log).toEqual(['1 start', 'other']);
    release();
    await Promise.all([first, second]);
    expect(log).toEqual(['1 start', 'other', '1 end', '2']);
    // A failed turn does not stop the next one.
    await expect(
      t.order.inTurn('app_o', 'REF-1', async () => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(t.order.inTurn('app_o', 'REF-1', async () => 'next')).resolves.toBe('next');
  });
});
