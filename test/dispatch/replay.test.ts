import { describe, expect, it, vi } from 'vitest';
import { dispatchIdFor } from '../../shared/storage/ledger/dispatches.js';
import { dispatchAdminService } from '../../services/dispatch-admin/index.js';
import { getEndpointState } from '../../shared/storage/webhooks/endpoints.js';
import { consentEvent, publish, sandboxApp, useDispatcher, waitForDispatch } from './helpers.js';

const TOKEN = 'test-admin-token-0123456789';
const f = useDispatcher(
  'dispatch-replay',
  {
    SVC_ADMIN_TOKEN: TOKEN,
    WEBHOOK_TIMEOUT_MS: '1000',
    DISPATCH_SAFETY_NET_MS: '5000',
    DISPATCH_SWEEP_INTERVAL_MS: '200',
  },
  [dispatchAdminService],
);

const admin = (path: string, body?: unknown, token = TOKEN) =>
  fetch(`${f.p.url}/api/v1/admin${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body ?? {}),
  });

/** An app whose endpoint fails until `fixed` is set; its dispatches fail fast (100 000×). */
async function failingApp(path: string) {
  let fixed = false;
  f.rcv.on(path, (_r, res) => res.writeHead(fixed ? 200 : 500).end());
  const { app } = await sandboxApp(f.p.rt, f.rcv.url(path), 100_000);
  return { app, fix: () => (fixed = true) };
}

async function failedDispatch(
  app: { appId: string; environment: 'sandbox' | 'live' },
  createdAt?: string,
) {
  const e = consentEvent(app, createdAt ? { createdAt } : {});
  await publish(f.p.rt, [e]);
  const id = dispatchIdFor(e.id, `${app.appId}:webhook`);
  await waitForDispatch(f.p.rt, id, (d) => expect(d.deliveryStatus).toBe('failed'));
  return id;
}

describe('dispatch replay (admin API)', () => {
  it('resends one dispatch now with the same dispatch id and webhook-id', async () => {
    const { app, fix } = await failingApp('/resend');
    const id = await failedDispatch(app);
    fix();
    const res = await admin(`/apps/${app.appId}/dispatches/${id}/resend`);
    expect(res.status).toBe(202);
    expect(await res.json()).toMatchObject({ dispatchId: id, deliveryStatus: 'failed' });
    const d = await waitForDispatch(f.p.rt, id, (x) => expect(x.deliveryStatus).toBe('delivered'));
    expect(d.attemptCount).toBe(9);
    expect(d.attempts.at(-1)).toMatchObject({
      attempt: 9,
      trigger: 'manual',
      statusCode: 200,
      outcome: 'delivered',
    });
    const last = f.rcv.at('/resend').at(-1)!;
    expect(last.headers['webhook-id']).toBe(id);
    expect(last.headers['x-svc-attempt']).toBe('9');
  });

  it('resends to a disabled endpoint, and its success enables the endpoint again', async () => {
    let fixed = false;
    f.rcv.on('/revived', (_r, res) => res.writeHead(fixed ? 200 : 410).end());
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/revived'));
    const id = await failedDispatch(app);
    await vi.waitFor(async () =>
      expect((await getEndpointState(f.p.rt, app.appId))?.disabledReason).toBe('gone'),
    );
    fixed = true;
    expect((await admin(`/apps/${app.appId}/dispatches/${id}/resend`)).status).toBe(202);
    const d = await waitForDispatch(f.p.rt, id, (x) => expect(x.deliveryStatus).toBe('delivered'));
    expect(d.attempts.map((a) => [a.statusCode, a.trigger])).toEqual([
      [410, 'first'],
      [200, 'manual'],
    ]);
    // Endpoint health is written just after the attempt's ledger entry.
    await vi.waitFor(async () => {
      const state = await getEndpointState(f.p.rt, app.appId);
      expect(state?.disabledAt).toBeUndefined();
      expect(state?.lastSuccessAt).toBeDefined();
    });
    // New events flow again.
    const e = consentEvent(app);
    await publish(f.p.rt, [e]);
    await waitForDispatch(f.p.rt, dispatchIdFor(e.id, `${app.appId}:webhook`), (x) =>
      expect(x.deliveryStatus).toBe('delivered'),
    );
  });

  it('recovers every failed dispatch of an app since a time', async () => {
    const { app, fix } = await failingApp('/recover');
    const old = await failedDispatch(app, '2020-01-01T00:00:00.000Z');
    const since = new Date(Date.now() - 60_000).toISOString();
    const a = await failedDispatch(app);
    const b = await failedDispatch(app);
    fix();
    const res = await admin(`/apps/${app.appId}/dispatches/recover`, { since });
    expect(res.status).toBe(202);
    expect(await res.json()).toEqual({ requeued: 2 });
    for (const id of [a, b])
      await waitForDispatch(f.p.rt, id, (x) => expect(x.deliveryStatus).toBe('delivered'));
    const before = await waitForDispatch(f.p.rt, old, (x) =>
      expect(x.deliveryStatus).toBe('failed'),
    );
    expect(before.attemptCount).toBe(8); // older than `since`: left alone
  });

  it('refuses without the admin token, for unknown ids, and with a bad body', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/other'));
    expect(
      (
        await admin(
          `/apps/${app.appId}/dispatches/recover`,
          { since: new Date().toISOString() },
          'wrong-token-wrong-token',
        )
      ).status,
    ).toBe(401);
    expect(
      (await admin(`/apps/${app.appId}/dispatches/dsp_01ARZ3NDEKTSV4RRFFQ69G5FAV/resend`)).status,
    ).toBe(404);
    expect(
      (
        await admin(`/apps/app_00000000000000000000/dispatches/recover`, {
          since: new Date().toISOString(),
        })
      ).status,
    ).toBe(404);
    const bad = await admin(`/apps/${app.appId}/dispatches/recover`, { since: 'yesterday' });
    expect(bad.status).toBe(422);
    expect(await bad.json()).toMatchObject({ code: 'SVC_VALIDATION_FAILED' });
    // A dispatch of another app is not found through this app.
    const { app: other, fix } = await failingApp('/foreign');
    fix();
    const e = consentEvent(other);
    await publish(f.p.rt, [e]);
    const id = dispatchIdFor(e.id, `${other.appId}:webhook`);
    await waitForDispatch(f.p.rt, id, (x) => expect(x.deliveryStatus).toBe('delivered'));
    expect((await admin(`/apps/${app.appId}/dispatches/${id}/resend`)).status).toBe(404);
    const doc = (await (await fetch(`${f.p.url}/openapi.json`)).json()) as {
      paths: Record<string, unknown>;
    };
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/admin/apps/{appId}/dispatches/{dispatchId}/resend',
        '/api/v1/admin/apps/{appId}/dispatches/recover',
      ]),
    );
  });
});
