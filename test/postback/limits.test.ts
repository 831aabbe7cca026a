import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postbackService } from '../../services/postback/index.js';
import { loadConfig } from '../../shared/config.js';
import { POSTBACK_PATH } from '../../shared/domain/consent/events.js';
import type { RunningProcess } from '../../bin/process.js';
import { client, type Reply } from '../admin/client.js';
import { testProcess } from '../helpers/stack.js';
import { ENCRYPTION_KEY, postbackApp, storeDispatch } from './fixture.js';

/**
 * At most POSTBACK_MAX_PER_DISPATCH postbacks are accepted per dispatch (here 3; 20 by
 * default), then 429 SVC_RATE_LIMITED: the count is kept atomically with the acceptance, so
 * concurrent postbacks cannot pass it, and an Idempotency-Key replay does not count again.
 */

/** Fixed, so a repeat with the same Idempotency-Key is the same request. */
const COMPLETED_AT = new Date().toISOString();
let p: RunningProcess;
let send: ReturnType<typeof client>;
let secretKey: string;
let appId: string;

beforeAll(async () => {
  p = await testProcess('postback-limits', [postbackService], [], {
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
    POSTBACK_MAX_PER_DISPATCH: '3',
  });
  const a = await postbackApp(p.rt, 'limits');
  [secretKey, appId] = [a.secretKey, a.app.appId];
  send = client(p.url);
});
afterAll(async () => {
  await p?.close();
});

const post = (d: { dispatchId: string; referenceId: string }, headers = {}) =>
  send(
    'POST',
    POSTBACK_PATH,
    {
      dispatchId: d.dispatchId,
      referenceId: d.referenceId,
      status: 'processed',
      completedAt: COMPLETED_AT,
      risk: 'none',
      tags: [],
      actions: [{ type: 'stop_marketing', result: 'done' }],
    },
    { 'x-secret-key': secretKey, ...headers },
  );

function expectCapped(r: Reply) {
  expect(r.status, JSON.stringify(r.body)).toBe(429);
  expect(r.body.code).toBe('SVC_RATE_LIMITED');
  expect(r.headers.get('content-type')).toContain('application/problem+json');
}

describe('postbacks per dispatch', () => {
  it('defaults to 20', () => {
    expect(loadConfig({}).POSTBACK_MAX_PER_DISPATCH).toBe(20);
  });

  it('accepts the first N, then answers 429 SVC_RATE_LIMITED', async () => {
    const d = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    const first = await post(d, { 'idempotency-key': 'pb-1' });
    expect(first.status).toBe(202);
    expect((await post(d)).status).toBe(202);
    expect((await post(d)).status).toBe(202);
    expectCapped(await post(d));
    expectCapped(await post(d));
    // A replay of an accepted postback is still its first answer, not a new postback.
    const replay = await post(d, { 'idempotency-key': 'pb-1' });
    expect(replay.status).toBe(202);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(first.body);
    // Another dispatch has its own count.
    const other = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    expect((await post(other)).status).toBe(202);
  });

  it('holds under concurrency: exactly N of many simultaneous postbacks are accepted', async () => {
    const d = await storeDispatch(p.rt, appId, 'data.deleted');
    const answers = await Promise.all(Array.from({ length: 10 }, () => post(d)));
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 202)).toHaveLength(3);
    expect(statuses.filter((s) => s !== 202).every((s) => s === 429)).toBe(true);
  });
});
