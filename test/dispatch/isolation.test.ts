import { describe, expect, it, vi } from 'vitest';
import { dispatchIdFor } from '../../shared/storage/ledger/dispatches.js';
import { consentEvent, publish, sandboxApp, waitForDispatch, useDispatcher } from './helpers.js';

const f = useDispatcher('dispatch-isolation', {
  WEBHOOK_TIMEOUT_MS: '8000',
  DISPATCH_SAFETY_NET_MS: '30000',
  DISPATCH_CONCURRENCY_PER_ENDPOINT: '3',
});

describe('endpoint isolation', () => {
  it('delivers to healthy endpoints promptly while another hangs, holding only its own slots', async () => {
    const { app: stuck } = await sandboxApp(f.p.rt, f.rcv.url('/hang'));
    const { app: healthy } = await sandboxApp(f.p.rt, f.rcv.url('/healthy'));
    f.rcv.on('/hang', () => undefined); // never answers
    const stuckEvents = Array.from({ length: 10 }, () => consentEvent(stuck));
    const healthyEvents = Array.from({ length: 5 }, () => consentEvent(healthy));
    // One key: one partition, the hanging endpoint's events first — head-of-line blocking would show.
    const key = 'one-partition';
    await publish(f.p.rt, stuckEvents, { key });
    const t0 = Date.now();
    await publish(f.p.rt, healthyEvents, { key });
    await vi.waitFor(() => expect(f.rcv.at('/healthy')).toHaveLength(5), {
      timeout: 6000,
      interval: 20,
    });
    // Well inside the 8 s timeout the stuck endpoint's requests are still open: its three
    // slots (DISPATCH_CONCURRENCY_PER_ENDPOINT), whose requests may reach the receiver after
    // the healthy deliveries did.
    await vi.waitFor(() => expect(f.rcv.at('/hang')).toHaveLength(3), {
      timeout: 2000,
      interval: 20,
    });
    expect(Date.now() - t0).toBeLessThan(6000);
    expect(f.rcv.open).toBe(3);
    for (const e of healthyEvents)
      await waitForDispatch(f.p.rt, dispatchIdFor(e.id, `${healthy.appId}:webhook`), (d) =>
        expect(d.deliveryStatus).toBe('delivered'),
      );
    const inFlight = await f.p.rt.registry.getSingleMetricAsString('svc_webhook_in_flight');
    expect(inFlight).toMatch(/lane="first"\} 3/);
    f.rcv.releaseAll();
  });
});
