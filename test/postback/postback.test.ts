import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postbackService } from '../../services/postback/index.js';
import { postbackMessage } from '../../shared/domain/compliance/postback.js';
import { POSTBACK_PATH } from '../../shared/domain/consent/events.js';
import { newDispatchId, newReferenceId } from '../../shared/domain/ids.js';
import type { RunningProcess } from '../../bin/process.js';
import { client, type Reply } from '../admin/client.js';
import { collectTopic } from '../helpers/kafka.js';
import { testProcess } from '../helpers/stack.js';
import { ENCRYPTION_KEY, postbackApp, storeDispatch } from './fixture.js';

let p: RunningProcess;
let topic: Awaited<ReturnType<typeof collectTopic>>;
let send: ReturnType<typeof client>;
let secretKey: string;
let appId: string;
let otherSecretKey: string;

beforeAll(async () => {
  p = await testProcess('postback', [postbackService], [], { SVC_ENCRYPTION_KEY: ENCRYPTION_KEY });
  const a = await postbackApp(p.rt, 'postback app');
  const b = await postbackApp(p.rt, 'other app');
  [secretKey, appId, otherSecretKey] = [a.secretKey, a.app.appId, b.secretKey];
  send = client(p.url);
  topic = await collectTopic(p.rt.kafka, p.rt.topics.postbacks);
});
afterAll(async () => {
  await topic?.stop();
  await p?.close();
});

const post = (body: unknown, headers: Record<string, string> = {}) =>
  send('POST', POSTBACK_PATH, body, { 'x-secret-key': secretKey, ...headers });

const postback = (d: { dispatchId: string; referenceId: string }, over = {}) => ({
  dispatchId: d.dispatchId,
  referenceId: d.referenceId,
  status: 'deleted',
  completedAt: '2026-01-02T03:04:05.678Z',
  risk: 'low',
  tags: ['crm', 'backups'],
  actions: [{ type: 'erase_crm_record', result: 'done' }],
  ...over,
});

const paths = (r: Reply) => (r.body.errors as { path: string }[]).map((e) => e.path).sort();
const onTopic = (dispatchId: string) => topic.messages.filter((m) => m.key === dispatchId);

function expectProblem(r: Reply, status: number, code: string) {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  expect(r.headers.get('content-type')).toContain('application/problem+json');
  expect(r.body).toMatchObject({ status, code });
}

describe('accepted postbacks', () => {
  it('answers 202 with a receipt and hands the postback to Kafka, keyed by dispatch', async () => {
    const d = await storeDispatch(p.rt, appId, 'data.deleted');
    const before = Date.now();
    const r = await post(postback(d, { remark: 'erased from CRM and backups' }));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(Object.keys(r.body).sort()).toEqual(['dispatchId', 'postbackId', 'receivedAt']);
    expect(r.body.dispatchId).toBe(d.dispatchId);
    expect(r.body.postbackId).toMatch(/^pb_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(Date.parse(r.body.receivedAt)).toBeGreaterThanOrEqual(before - 5);
    expect(Date.parse(r.body.receivedAt)).toBeLessThanOrEqual(Date.now());

    await vi.waitFor(() => expect(onTopic(d.dispatchId)).toHaveLength(1), { timeout: 10_000 });
    const m = onTopic(d.dispatchId)[0]!;
    expect(postbackMessage.parse(m.value)).toEqual({
      type: 'postback',
      ...postback(d, { remark: 'erased from CRM and backups' }),
      appId,
      postbackId: r.body.postbackId,
      receivedAt: r.body.receivedAt,
    });
    // Stored in its writer's outbox partition, kept (not deleted) until its TTL.
    const kept = await p.rt.dynamo.doc.send(
      new GetCommand({ TableName: p.rt.tables.outbox, Key: { id: r.body.postbackId } }),
    );
    expect(kept.Item).toMatchObject({
      obxw: expect.stringMatching(new RegExp(`^${p.rt.outbox.writerId}#[0-7]$`)),
      expiresAt: expect.any(Number),
    });
  });

  it('accepts several postbacks for one dispatch, each with its own id; tags and actions default to []', async () => {
    const d = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    const first = await post(
      postback(d, { status: 'failed', risk: 'medium', remark: 'CRM was down' }),
    );
    const { tags: _t, actions: _a, ...bare } = postback(d, { status: 'processed', risk: 'none' });
    const second = await post(bare);
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(first.body.postbackId).not.toBe(second.body.postbackId);
    await vi.waitFor(() => expect(onTopic(d.dispatchId)).toHaveLength(2), { timeout: 10_000 });
    const values = onTopic(d.dispatchId).map((m) => postbackMessage.parse(m.value));
    expect(values.map((v) => [v.postbackId, v.status])).toEqual([
      [first.body.postbackId, 'failed'],
      [second.body.postbackId, 'processed'],
    ]);
    expect(values[1]).toMatchObject({ tags: [], actions: [] });
    expect(values[1]).not.toHaveProperty('remark');
  });

  it('accepts consent.expired dispatches too', async () => {
    const d = await storeDispatch(p.rt, appId, 'consent.expired');
    expect((await post(postback(d, { status: 'processed', risk: 'none' }))).status).toBe(202);
  });

  it('replays an Idempotency-Key: same receipt, one message; a different body is 422', async () => {
    const d = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    const body = postback(d, { status: 'processed' });
    const key = `pb-${d.dispatchId}`;
    const a = await post(body, { 'idempotency-key': key });
    const b = await post(body, { 'idempotency-key': key });
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(b.body).toEqual(a.body);
    expect(b.headers.get('idempotent-replayed')).toBe('true');
    expect(a.headers.get('idempotent-replayed')).toBeNull();
    const c = await post({ ...body, risk: 'none' }, { 'idempotency-key': key });
    expectProblem(c, 422, 'SVC_VALIDATION_FAILED');
    expect(paths(c)).toEqual(['header:Idempotency-Key']);
    // A fresh key is a new postback: the sentinel proves the replay published nothing.
    const sentinel = await post(body, { 'idempotency-key': `${key}-2` });
    expect(sentinel.status).toBe(202);
    await vi.waitFor(() =>
      expect(
        onTopic(d.dispatchId).map((m) => (m.value as { postbackId: string }).postbackId),
      ).toEqual([a.body.postbackId, sentinel.body.postbackId]),
    );
  });

  it('is documented in the OpenAPI document with its zod schemas', async () => {
    const r = await send('GET', '/openapi.json');
    const op = r.body.paths[POSTBACK_PATH].post;
    expect(op.security).toEqual([{ secretKey: [] }]);
    const named = (ref: { $ref: string }) =>
      r.body.components.schemas[ref.$ref.replace('#/components/schemas/', '')];
    const schema = named(op.requestBody.content['application/json'].schema);
    expect(schema.required).toEqual(
      expect.arrayContaining(['dispatchId', 'referenceId', 'status', 'completedAt', 'risk']),
    );
    expect(schema.properties.status.enum).toEqual(['processed', 'deleted', 'failed', 'partial']);
    expect(Object.keys(op.responses).sort()).toEqual([
      '202',
      '400',
      '401',
      '404',
      '409',
      '413',
      '422',
      '429',
      '500',
      '503',
    ]);
    expect(named(op.responses['202'].content['application/json'].schema).required).toEqual(
      expect.arrayContaining(['dispatchId', 'receivedAt', 'postbackId']),
    );
  });
});

describe('refused postbacks', () => {
  it('401 without a secret key or with a wrong one', async () => {
    const d = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    for (const headers of [
      {},
      { 'x-secret-key': 'svc_sk_test_' + 'x'.repeat(40) },
      { 'x-secret-key': 'nonsense' },
    ] as Record<string, string>[]) {
      const r = await send('POST', POSTBACK_PATH, postback(d), headers);
      expectProblem(r, 401, 'SVC_UNAUTHORIZED');
    }
  });

  it('404 for an unknown dispatch and, identically, for another app’s dispatch', async () => {
    const mine = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    const unknown = await post(postback({ ...mine, dispatchId: newDispatchId() }));
    const foreign = await send('POST', POSTBACK_PATH, postback(mine), {
      'x-secret-key': otherSecretKey,
    });
    expectProblem(unknown, 404, 'SVC_NOT_FOUND');
    expectProblem(foreign, 404, 'SVC_NOT_FOUND');
    expect(foreign.body.detail).toBe(unknown.body.detail);
  });

  it('409 for a dispatch whose event needs no postback', async () => {
    for (const type of ['consent.created', 'consent.granted', 'consent.expiry.reminder'] as const) {
      const d = await storeDispatch(p.rt, appId, type);
      const r = await post(postback(d, { status: 'processed' }));
      expectProblem(r, 409, 'SVC_CONFLICT');
      expect(r.body.detail).toContain(type);
    }
  });

  it('422 /referenceId when it is not the dispatch’s principal', async () => {
    const d = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    const r = await post(postback({ ...d, referenceId: newReferenceId() }));
    expectProblem(r, 422, 'SVC_VALIDATION_FAILED');
    expect(paths(r)).toEqual(['/referenceId']);
  });
});

describe('validation (422 with paths)', () => {
  const long = (n: number) => 'a'.repeat(n);
  // [what, change to a valid body, expected paths]
  const cases: [string, Record<string, unknown>, string[]][] = [
    ['dispatchId not dsp_ + ULID', { dispatchId: 'dsp_123' }, ['/dispatchId']],
    [
      'dispatchId lower-case ULID',
      { dispatchId: 'dsp_01arz3ndektsv4rrffq69g5fav' },
      ['/dispatchId'],
    ],
    ['referenceId of the wrong form', { referenceId: 'SVC-REF-123' }, ['/referenceId']],
    ['referenceId with a look-alike letter', { referenceId: 'SVC-REF-ABCDEFGI' }, ['/referenceId']],
    ['unknown status', { status: 'done' }, ['/status']],
    ['unknown risk', { risk: 'severe' }, ['/risk']],
    ['completedAt without milliseconds', { completedAt: '2026-01-02T03:04:05Z' }, ['/completedAt']],
    [
      'completedAt with an offset',
      { completedAt: '2026-01-02T08:34:05.678+05:30' },
      ['/completedAt'],
    ],
    [
      'completedAt in microseconds',
      { completedAt: '2026-01-02T03:04:05.678901Z' },
      ['/completedAt'],
    ],
    ['completedAt without zone', { completedAt: '2026-01-02T03:04:05.678' }, ['/completedAt']],
    ['completedAt impossible date', { completedAt: '2026-02-30T03:04:05.678Z' }, ['/completedAt']],
    ['completedAt as epoch number', { completedAt: 1767323045678 }, ['/completedAt']],
    ['completedAt in the future', { completedAt: '2099-01-01T00:00:00.000Z' }, ['/completedAt']],
    ['33 tags', { tags: Array.from({ length: 33 }, (_, i) => `t${i}`) }, ['/tags']],
    ['a 65-character tag', { tags: ['ok', long(65)] }, ['/tags/1']],
    ['an empty tag', { tags: [''] }, ['/tags/0']],
    ['tags not an array', { tags: 'crm' }, ['/tags']],
    [
      '33 actions',
      { actions: Array.from({ length: 33 }, () => ({ type: 'a', result: 'b' })) },
      ['/actions'],
    ],
    ['an action without result', { actions: [{ type: 'erase' }] }, ['/actions/0/result']],
    [
      'a 65-character action type',
      { actions: [{ type: long(65), result: 'ok' }] },
      ['/actions/0/type'],
    ],
    [
      'an action with an extra key',
      { actions: [{ type: 'a', result: 'b', at: 1 }] },
      ['/actions/0'],
    ],
    ['a 2001-character remark', { remark: long(2001) }, ['/remark']],
    ['failed without remark', { status: 'failed' }, ['/remark']],
    ['failed with a blank remark', { status: 'failed', remark: '   ' }, ['/remark']],
    ['an unknown field', { completed_at: 'x' }, ['/']],
    [
      'several problems at once, failed included',
      { status: 'failed', risk: 'x', completedAt: 'yesterday' },
      ['/completedAt', '/remark', '/risk'],
    ],
  ];

  it.each(cases)('%s', async (_what, change, expected) => {
    const d = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    const r = await post({ ...postback(d), ...change });
    expectProblem(r, 422, 'SVC_VALIDATION_FAILED');
    expect(paths(r)).toEqual(expected);
  });

  it('requires every core field', async () => {
    const r = await post({});
    expectProblem(r, 422, 'SVC_VALIDATION_FAILED');
    expect(paths(r)).toEqual(['/completedAt', '/dispatchId', '/referenceId', '/risk', '/status']);
    expectProblem(await post([]), 422, 'SVC_VALIDATION_FAILED');
  });

  it('puts nothing on the topic for a refused postback', async () => {
    const d = await storeDispatch(p.rt, appId, 'consent.withdrawn');
    for (const [, change] of cases) await post({ ...postback(d), ...change });
    await post(postback({ ...d, referenceId: newReferenceId() }));
    await post(postback(d), { 'x-secret-key': otherSecretKey });
    // Same key, same partition, in order: once the sentinel arrives, anything refused before
    // it would have arrived too.
    const sentinel = await post(postback(d));
    expect(sentinel.status).toBe(202);
    await vi.waitFor(() => expect(onTopic(d.dispatchId).length).toBeGreaterThan(0), {
      timeout: 10_000,
    });
    expect(
      onTopic(d.dispatchId).map((m) => (m.value as { postbackId: string }).postbackId),
    ).toEqual([sentinel.body.postbackId]);
  });
});
