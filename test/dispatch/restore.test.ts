import { DeleteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { describe, expect, it, vi } from 'vitest';
import { dispatchKey } from '../../shared/storage/ledger/dispatches.js';
import {
  consentEvent,
  dispatchIdOf,
  publish,
  sandboxApp,
  useDispatcher,
  waitForDispatch,
} from './helpers.js';

/**
 * A store killed with SIGKILL can lose writes it had acknowledged (DynamoDB Local does:
 * `npm run chaos:store`). A first attempt recorded just before such an outage has its event
 * committed in Kafka, so only the dispatcher's own memory can write it again. Here the loss is
 * made by hand (the dispatch item deleted behind the dispatcher's back) and the outage is
 * reported through the runtime's outage watch, as the DynamoDB client's middleware reports it.
 */
const f = useDispatcher('dispatch-restore', {
  WEBHOOK_TIMEOUT_MS: '800',
  DISPATCH_CLOCK_SKEW_MS: '0',
});

async function ledgerItem(dispatchId: string) {
  const r = await f.p.rt.dynamo.doc.send(
    new GetCommand({
      TableName: f.p.rt.tables.ledger,
      Key: dispatchKey(dispatchId),
      ConsistentRead: true,
    }),
  );
  return r.Item;
}

async function counter(name: string): Promise<number> {
  const m = await f.p.rt.registry.getSingleMetric(name)?.get();
  return m?.values.reduce((s, v) => s + v.value, 0) ?? 0;
}
const restoredCount = () => counter('svc_webhook_ledger_restored_total');
const rechecks = () => counter('svc_webhook_ledger_rechecks_total');

describe('first attempts the store lost after acknowledging them', () => {
  it('are written again, as they were, once the store answers after an outage', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/restore'));
    const events = [0, 1, 2].map(() => consentEvent(app, { type: 'consent.granted' }));
    await publish(f.p.rt, events);
    const ids = events.map((e) => dispatchIdOf(app.appId, e.id));
    for (const id of ids)
      await waitForDispatch(f.p.rt, id, (d) => expect(d.deliveryStatus).toBe('delivered'));
    const before = await ledgerItem(ids[1]!);
    expect(before).toBeDefined();
    const restored = await restoredCount();

    // The store "loses" one acknowledged record; then an outage opens and closes.
    await f.p.rt.dynamo.doc.send(
      new DeleteCommand({ TableName: f.p.rt.tables.ledger, Key: dispatchKey(ids[1]!) }),
    );
    expect(await ledgerItem(ids[1]!)).toBeUndefined();
    f.p.rt.storeOutages.failed(Date.now());
    f.p.rt.storeOutages.succeeded();

    await vi.waitFor(async () => expect(await ledgerItem(ids[1]!)).toEqual(before), {
      timeout: 10_000,
      interval: 100,
    });
    await vi.waitFor(async () => expect(await restoredCount()).toBe(restored + 1));
    // The two the store kept were read, not written again; the webhook was not sent again.
    expect(f.rcv.at('/restore')).toHaveLength(3);
  });

  it('leaves records acknowledged long before the outage alone', async () => {
    const { app } = await sandboxApp(f.p.rt, f.rcv.url('/old'));
    const e = consentEvent(app, { type: 'consent.granted' });
    await publish(f.p.rt, [e]);
    const id = dispatchIdOf(app.appId, e.id);
    await waitForDispatch(f.p.rt, id, (d) => expect(d.deliveryStatus).toBe('delivered'));
    await f.p.rt.dynamo.doc.send(
      new DeleteCommand({ TableName: f.p.rt.tables.ledger, Key: dispatchKey(id) }),
    );
    const restored = await restoredCount();
    const checked = await rechecks();
    // An outage that began a minute after this record was acknowledged: outside the window.
    f.p.rt.storeOutages.failed(Date.now() + 60_000);
    f.p.rt.storeOutages.succeeded();
    await vi.waitFor(async () => expect(await rechecks()).toBe(checked + 1));
    expect(await ledgerItem(id)).toBeUndefined();
    expect(await restoredCount()).toBe(restored);
    // An outage that began now: the record is inside the window and is written again.
    f.p.rt.storeOutages.failed(Date.now());
    f.p.rt.storeOutages.succeeded();
    await vi.waitFor(async () => expect(await ledgerItem(id)).toBeDefined(), { timeout: 10_000 });
    expect(await restoredCount()).toBe(restored + 1);
  });
});
