import { describe, expect, it } from 'vitest';
import type { DispatchState } from '../../shared/storage/ledger/dispatches.js';
import type { AttemptResult } from '../../shared/webhooks/client.js';
import { destinationOf, planSettle } from './settle.js';

const CREATED = Date.parse('2026-11-25T04:00:00.000Z');
const START = CREATED + 1_000;

function state(over: Partial<DispatchState> = {}): DispatchState {
  return {
    dispatchId: 'dsp_01JZ0000000000000000000000',
    appId: 'app_x',
    createdAt: new Date(CREATED).toISOString(),
    attempts: 0,
    deliveryStatus: 'pending',
    headHash: 'h',
    ...over,
  } as DispatchState;
}

const result = (over: Partial<AttemptResult>): AttemptResult => ({
  ok: false,
  startedAtMs: START,
  durationMs: 40,
  responseExcerpt: '',
  ...over,
});

const app = { webhookUrl: 'https://shop.example/hooks?token=secret', slaTimeScale: 1 };
/** `app: null` plans an attempt whose app was gone at send time. */
const plan = (r: AttemptResult, s = state(), a: typeof app | null = app) =>
  planSettle({ state: s, trigger: s.attempts === 0 ? 'first' : 'retry' }, a ?? undefined, r, {
    shards: 4,
    random: () => 0.5,
  });

describe('planSettle', () => {
  it.each([
    // name, result, expected status, retry?, outcome label, health
    ['a 2xx', result({ ok: true, statusCode: 200 }), 'delivered', false, 'delivered', 'success'],
    ['a 500', result({ statusCode: 500, errorClass: 'http' }), 'pending', true, 'http', 'failure'],
    ['a 410', result({ statusCode: 410, errorClass: 'http' }), 'failed', false, 'http', 'gone'],
    ['a timeout', result({ errorClass: 'timeout' }), 'pending', true, 'timeout', 'failure'],
    [
      'a disabled endpoint',
      result({ errorClass: 'endpoint_disabled', refused: true, durationMs: 0 }),
      'failed',
      false,
      'endpoint_disabled',
      undefined,
    ],
  ] as const)('%s', (_name, r, status, retries, outcome, health) => {
    const p = plan(r);
    expect(p.record.deliveryStatus).toBe(status);
    expect(p.next !== undefined).toBe(retries);
    expect(p.record.next).toEqual(p.next);
    expect(p.outcome).toBe(outcome);
    expect(p.health).toBe(health);
    expect(p.endMs).toBe(START + r.durationMs);
  });

  it('schedules the retry from the end of the attempt, in the dispatch’s shard family', () => {
    const p = plan(result({ statusCode: 503, errorClass: 'http' }));
    // First retry after 5 s (± 20 % jitter; the random source gives the middle).
    expect(Date.parse(p.next!.dueAt)).toBe(START + 40 + 5_000);
    expect(p.next).toMatchObject({
      dispatchId: state().dispatchId,
      appId: 'app_x',
      kind: 'attempt',
    });
  });

  it('records origin and path only, never the query, and cuts long error messages', () => {
    const p = plan(result({ errorClass: 'connection', errorMessage: 'x'.repeat(900) }));
    expect(p.record.entry.destination).toBe('https://shop.example/hooks');
    expect(p.record.entry.errorMessage).toHaveLength(500);
    expect(p.record.entry).toMatchObject({ trigger: 'first', outcome: 'failed', durationMs: 40 });
    expect(destinationOf('not a url')).toBe('(invalid URL)');
  });

  it('times end to end only the attempt that first delivers', () => {
    expect(plan(result({ ok: true, statusCode: 204 })).endToEndS).toBe(1.04);
    const again = state({ attempts: 2, deliveryStatus: 'delivered' });
    expect(plan(result({ ok: true, statusCode: 200 }), again).endToEndS).toBeUndefined();
    expect(plan(result({ statusCode: 500, errorClass: 'http' })).endToEndS).toBeUndefined();
  });

  it('observes duration only when a request was made, and leaves health alone without an app', () => {
    expect(plan(result({ errorClass: 'connection', refused: true })).observeDuration).toBe(false);
    expect(plan(result({ errorClass: 'app_missing', durationMs: 0 }), state(), null)).toMatchObject(
      {
        observeDuration: false,
        health: undefined,
        outcome: 'app_missing',
      },
    );
    expect(plan(result({ ok: true, statusCode: 200 })).observeDuration).toBe(true);
  });

  it('never un-delivers: a failure after a delivery (an operator resend) keeps it delivered, without retries', () => {
    const p = plan(
      result({ statusCode: 500, errorClass: 'http' }),
      state({ attempts: 1, deliveryStatus: 'delivered' }),
    );
    expect(p.record.deliveryStatus).toBe('delivered');
    expect(p.next).toBeUndefined();
  });
});
