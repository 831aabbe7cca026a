import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunningProcess } from '../../bin/process.js';
import type { ServiceModule } from '../../shared/module.js';
import { AppError } from '../../shared/errors.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { locals } from '../../shared/http/locals.js';
import type { App } from '../../shared/domain/types.js';
import { testProcess } from '../helpers/stack.js';

let counter = 0;

/** A test-only service: "auth" by a header naming the app, then the shared middleware. */
const counterService: ServiceModule = {
  name: 'counter',
  mount(app, rt) {
    app.use('/t', (req, res, next) => {
      const appId = req.get('x-test-app');
      if (appId) locals(res).app = { appId } as App;
      next();
    });
    app.post('/t/count', rateLimit(rt), idempotency(rt, 'test'), (req, res) => {
      counter += 1;
      res.status(201).setHeader('Location', `/t/count/${counter}`);
      res.json({ counter, echo: req.body as unknown });
    });
    app.post('/t/fail', idempotency(rt, 'test'), (req, _res, next) => {
      counter += 1;
      next(req.get('x-fail') === '500' ? new Error('boom') : new AppError('SVC_CONFLICT', 'nope'));
    });
  },
};

let p: RunningProcess;
beforeAll(async () => {
  p = await testProcess('xcut', [counterService], [], {
    RATE_LIMIT_RPS: '1',
    RATE_LIMIT_BURST: '5',
  });
});
afterAll(async () => {
  await p.close();
});

const post = (path: string, body: unknown, headers: Record<string, string>) =>
  fetch(`${p.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

describe('Idempotency-Key and rate limit on the real stack', () => {
  it('replays the first response for a repeated key without applying again', async () => {
    const before = counter;
    const first = await post(
      '/t/count',
      { a: 1 },
      { 'x-test-app': 'app1', 'idempotency-key': 'k-1' },
    );
    const firstBody = await first.json();
    const again = await post(
      '/t/count',
      { a: 1 },
      { 'x-test-app': 'app1', 'idempotency-key': 'k-1' },
    );
    expect(again.status).toBe(201);
    expect(again.headers.get('location')).toBe(first.headers.get('location'));
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.headers.get('content-type')).toContain('application/json');
    expect(await again.json()).toEqual(firstBody);
    expect(counter).toBe(before + 1);

    // The same key with another body is refused; another app's same key is independent.
    const other = await post(
      '/t/count',
      { a: 2 },
      { 'x-test-app': 'app1', 'idempotency-key': 'k-1' },
    );
    expect(other.status).toBe(422);
    const otherApp = await post(
      '/t/count',
      { a: 1 },
      { 'x-test-app': 'app2', 'idempotency-key': 'k-1' },
    );
    expect(otherApp.status).toBe(201);
    expect(counter).toBe(before + 2);
  });

  it('stores 4xx answers but lets a 5xx be retried', async () => {
    const before = counter;
    const c1 = await post('/t/fail', {}, { 'idempotency-key': 'f-1' });
    const c2 = await post('/t/fail', {}, { 'idempotency-key': 'f-1' });
    expect([c1.status, c2.status]).toEqual([409, 409]);
    expect(c2.headers.get('idempotent-replayed')).toBe('true');
    expect(counter).toBe(before + 1);
    const e1 = await post('/t/fail', {}, { 'idempotency-key': 'f-2', 'x-fail': '500' });
    const e2 = await post('/t/fail', {}, { 'idempotency-key': 'f-2', 'x-fail': '500' });
    expect([e1.status, e2.status]).toEqual([500, 500]);
    expect(e2.headers.get('idempotent-replayed')).toBeNull();
    expect(counter).toBe(before + 3);
  });

  it('answers 429 with Retry-After once an app exceeds its budget, per app', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 8; i++)
      statuses.push((await post('/t/count', { i }, { 'x-test-app': 'busy' })).status);
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(6);
    const limited = await post('/t/count', {}, { 'x-test-app': 'busy' });
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toMatchObject({ code: 'SVC_RATE_LIMITED' });
    expect((await post('/t/count', {}, { 'x-test-app': 'calm' })).status).toBe(201);
  });

  it('rejects a malformed key', async () => {
    const r = await post(
      '/t/count',
      {},
      { 'x-test-app': 'calm2', 'idempotency-key': 'x'.repeat(300) },
    );
    expect(r.status).toBe(422);
  });
});
