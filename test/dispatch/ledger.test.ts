import { GetCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { beforeAll, describe, expect, it } from 'vitest';
import { newReferenceId } from '../../shared/domain/ids.js';
import {
  dispatchIdFor,
  dispatchKey,
  dispatchPk,
  toDispatch,
} from '../../shared/storage/ledger/dispatches.js';
import { itemBytes } from '../../shared/storage/billing.js';
import { queryAll } from '../../shared/storage/query.js';
import { tamperFirstAttempt } from '../helpers/tamper.js';
import {
  getDispatch,
  listDispatchesByApp,
  listDispatchesByReference,
  verifyDispatchChain,
} from '../../shared/ledger/queries.js';
import type { App } from '../../shared/domain/types.js';
import { consentEvent, publish, sandboxApp, waitForDispatch, useDispatcher } from './helpers.js';

let app: App;
const ref = newReferenceId();
const times = ['2025-03-01T10:00:00.000Z', '2025-03-01T11:00:00.000Z', '2025-03-01T12:00:00.000Z'];
const ids: string[] = [];

const f = useDispatcher('dispatch-ledger', {
  WEBHOOK_TIMEOUT_MS: '1000',
  DISPATCH_SAFETY_NET_MS: '5000',
});
beforeAll(async () => {
  app = (await sandboxApp(f.p.rt, f.rcv.url('/ledger'), 3)).app;
  // Each dispatch's first attempt is refused, its retry accepted.
  const seen = new Set<unknown>();
  f.rcv.on('/ledger', (r, res) => {
    const first = !seen.has(r.headers['webhook-id']);
    seen.add(r.headers['webhook-id']);
    res.writeHead(first ? 503 : 200).end(first ? 'not yet' : 'done');
  });
  const events = times.map((createdAt, i) =>
    consentEvent(app, {
      createdAt,
      type: i === 1 ? 'data.deleted' : 'consent.granted',
      ...(i < 2 ? { referenceId: ref } : {}),
    }),
  );
  await publish(f.p.rt, events, { key: 'ordered' });
  for (const e of events) {
    const id = dispatchIdFor(e.id, `${app.appId}:webhook`);
    ids.push(id);
    await waitForDispatch(f.p.rt, id, (d) => expect(d.deliveryStatus).toBe('delivered'));
  }
});

describe('dispatch ledger queries', () => {
  it('lists by app and event time, with from/to, order and cursor paging', async () => {
    const all = await listDispatchesByApp(f.p.rt, app.appId);
    expect(all.items.map((d) => d.dispatchId)).toEqual(ids);
    expect(all.nextCursor).toBeNull();
    const page1 = await listDispatchesByApp(f.p.rt, app.appId, { limit: 2 });
    expect(page1.items.map((d) => d.dispatchId)).toEqual(ids.slice(0, 2));
    expect(page1.nextCursor).toEqual(expect.any(String));
    const page2 = await listDispatchesByApp(f.p.rt, app.appId, {
      limit: 2,
      cursor: page1.nextCursor!,
    });
    expect(page2.items.map((d) => d.dispatchId)).toEqual(ids.slice(2));
    expect(
      (await listDispatchesByApp(f.p.rt, app.appId, { from: times[1] })).items.map(
        (d) => d.dispatchId,
      ),
    ).toEqual(ids.slice(1));
    expect(
      (await listDispatchesByApp(f.p.rt, app.appId, { to: times[1] })).items.map(
        (d) => d.dispatchId,
      ),
    ).toEqual(ids.slice(0, 1));
    expect(
      (await listDispatchesByApp(f.p.rt, app.appId, { order: 'desc' })).items.map(
        (d) => d.dispatchId,
      ),
    ).toEqual([...ids].reverse());
    expect(
      (await listDispatchesByApp(f.p.rt, app.appId, { event: 'data.deleted' })).items.map(
        (d) => d.dispatchId,
      ),
    ).toEqual([ids[1]]);
    await expect(
      listDispatchesByApp(f.p.rt, app.appId, { cursor: 'not-a-cursor' }),
    ).rejects.toMatchObject({ code: 'SVC_VALIDATION_FAILED' });
    // The API shape: no storage keys, no body, the attempt count named as such.
    const d = all.items[0]!;
    expect(d).toMatchObject({
      attemptCount: 2,
      deliveryStatus: 'delivered',
      complianceFlag: null,
      postbackRequired: false,
    });
    for (const k of ['pk', 'sk', 'gsi1pk', 'body', 'duePk', 'attempts'])
      expect(d).not.toHaveProperty(k);
  });

  it('lists one principal’s dispatches by referenceId', async () => {
    const page = await listDispatchesByReference(f.p.rt, app.appId, ref);
    expect(page.items.map((d) => d.dispatchId)).toEqual(ids.slice(0, 2));
    expect(page.items[1]).toMatchObject({ event: 'data.deleted', postbackRequired: true });
    expect((await listDispatchesByReference(f.p.rt, app.appId, newReferenceId())).items).toEqual(
      [],
    );
  });

  it('lists each dispatch as its item shows it, from index entries of under 1 KB without the body', async () => {
    const rt = f.p.rt;
    const byApp = (await listDispatchesByApp(rt, app.appId)).items;
    const byRef = (await listDispatchesByReference(rt, app.appId, ref)).items;
    for (const id of ids) {
      const { Item: item } = await rt.dynamo.doc.send(
        new GetCommand({ TableName: rt.tables.ledger, Key: dispatchKey(id), ConsistentRead: true }),
      );
      // What a table created with gsi1/gsi2 projecting ALL lists, and the detail's own fields.
      const shown = toDispatch(item!);
      expect(byApp.find((d) => d.dispatchId === id)).toEqual(shown);
      if (item!.referenceId === ref) expect(byRef.find((d) => d.dispatchId === id)).toEqual(shown);
      const {
        postbacks: _p,
        attempts: _a,
        flagHistory: _h,
        flagEntries: _e,
        sequence,
        ...detail
      } = (await getDispatch(rt, id))!;
      expect(detail).toEqual(shown);
      // Not a view attribute: the detail reads it from the body the dispatch sends.
      expect(sequence).toBe(1);
      // The retry moved the head after the first write: the index entries followed it.
      expect(shown.attemptCount).toBe(2);
      expect(shown.headHash).not.toBe(shown.entryHash);
    }
    for (const index of ['gsi1', 'gsi2'] as const) {
      const entries = await queryAll(rt.dynamo.doc, {
        TableName: rt.tables.ledger,
        IndexName: index,
        KeyConditionExpression: '#pk = :pk',
        ExpressionAttributeNames: { '#pk': `${index}pk` },
        ExpressionAttributeValues: {
          ':pk': index === 'gsi1' ? `APP#${app.appId}` : `APP#${app.appId}#REF#${ref}`,
        },
      });
      expect(entries).toHaveLength(index === 'gsi1' ? 3 : 2);
      for (const e of entries) {
        for (const k of ['body', 'firstAttempt', 'attemptLog', 'duePk', 'traceparent'])
          expect(e).not.toHaveProperty(k);
        expect(itemBytes(e)).toBeLessThan(1024);
      }
    }
  });

  it('returns a dispatch with its attempts, hash-chained, and detects tampering', async () => {
    const d = (await getDispatch(f.p.rt, ids[0]!))!;
    // The receiver is on loopback: its replies are not kept.
    expect(d.attempts.map((a) => [a.attempt, a.statusCode, a.responseExcerpt])).toEqual([
      [1, 503, ''],
      [2, 200, ''],
    ]);
    expect(d.attempts[0]!.prevHash).toBe(d.entryHash);
    expect(d.attempts[1]!.prevHash).toBe(d.attempts[0]!.hash);
    expect(d.headHash).toBe(d.attempts[1]!.hash);
    expect(await verifyDispatchChain(f.p.rt, ids[0]!)).toEqual({ ok: true, entries: 3 });
    expect(await getDispatch(f.p.rt, 'dsp_01ARZ3NDEKTSV4RRFFQ69G5FAV')).toBeUndefined();

    await tamperFirstAttempt(f.p.rt, ids[0]!, 'statusCode', 200);
    expect(await verifyDispatchChain(f.p.rt, ids[0]!)).toEqual({
      ok: false,
      at: 'ATT#001',
      reason: 'hash does not match',
    });
    await f.p.rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: f.p.rt.tables.ledger,
        Key: { pk: dispatchPk(ids[2]!), sk: 'DSP' },
        UpdateExpression: 'SET referenceId = :r',
        ExpressionAttributeValues: { ':r': newReferenceId() },
      }),
    );
    // The item is packed (shared/storage/ledger/packed.ts): its creation hash is computed from the
    // changed fields, and its first attempt, packed against them, no longer checks out.
    expect(await verifyDispatchChain(f.p.rt, ids[2]!)).toMatchObject({ ok: false, at: 'ATT#001' });
  });
});
