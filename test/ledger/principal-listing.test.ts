import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DISPATCH_SK, dispatchPk } from '../../shared/storage/ledger/dispatches.js';
import { exportDispatches } from '../../shared/ledger/export.js';
import { allPages, startLedgerProcess, type LedgerApp, type LedgerFixture } from './fixture.js';

/**
 * A principal's dispatches, listed by referenceId, from two sources (shared/storage/ledger/principal.ts):
 * a consent's creation events' dispatches are written with no `gsi2` entry and found through the
 * principal's transactions; every other dispatch (here a withdrawal) has its entry. Real
 * processes: consents over REST, the dispatcher, DynamoDB Local and Kafka.
 */

let f: LedgerFixture;
let a: LedgerApp;
let b: LedgerApp;
let ref: string;
let other: string;
let mine: { dispatchId: string; event: string; createdAt: string }[];

const LIST = '/api/v1/ledger/dispatches';
const ids = (items: { dispatchId: string }[]) => items.map((d) => d.dispatchId);

async function stored(dispatchId: string) {
  const { Item } = await f.p.rt.dynamo.doc.send(
    new GetCommand({
      TableName: f.p.rt.tables.ledger,
      Key: { pk: dispatchPk(dispatchId), sk: DISPATCH_SK },
      ConsistentRead: true,
    }),
  );
  return Item!;
}

beforeAll(async () => {
  f = await startLedgerProcess('ledger-principal');
  [a, b] = [await f.createApp('a'), await f.createApp('b')];
  ref = await f.consent(a, 'user-1', { marketing: true, analytics: false });
  other = await f.consent(a, 'user-2', { marketing: true });
  await f.consent(b, 'user-1', { marketing: true });
  const put = await f.call('PUT', '/api/v1/consents/user-1', {
    key: a.writer,
    body: { consents: { marketing: false } },
  });
  expect(put.status, put.text).toBe(200);
  await f.settle(a, 5);
  await f.settle(b, 2);
  const all = (await f.call('GET', `${LIST}?limit=200`, { key: a.auditor })).body.items as {
    dispatchId: string;
    event: string;
    createdAt: string;
    referenceId: string;
  }[];
  mine = all.filter((d) => d.referenceId === ref);
}, 90_000);
afterAll(async () => {
  await f?.close();
});

describe('a principal’s dispatches', () => {
  it('are written without a principal-index entry for creation events only', async () => {
    // The two creation events share their time: the listing orders them by dispatch id.
    expect(
      mine
        .map((d) => d.event)
        .slice(0, 2)
        .sort(),
    ).toEqual(['consent.created', 'consent.granted']);
    expect(mine[2]!.event).toBe('consent.withdrawn');
    const items = await Promise.all(mine.map((d) => stored(d.dispatchId)));
    expect(items.map((i) => i.gsi2pk)).toEqual([undefined, undefined, `APP#${a.appId}#REF#${ref}`]);
    // Listed by app through gsi1 or a carrier (app-pages.ts): never neither.
    const byApp = (await f.call('GET', `${LIST}?limit=200`, { key: a.auditor })).body.items as {
      dispatchId: string;
    }[];
    expect(ids(byApp)).toEqual(expect.arrayContaining(ids(mine)));
  });

  it('are all listed by referenceId, from both sources, in event-time order', async () => {
    const r = await f.call('GET', `${LIST}?referenceId=${ref}`, { key: a.auditor });
    expect(r.status).toBe(200);
    expect(ids(r.body.items)).toEqual(ids(mine));
    expect(r.body.nextCursor).toBeNull();
    const pages = await allPages(f, a.auditor, `referenceId=${ref}&limit=1`);
    expect(pages.map((p) => p.ids.length)).toEqual([1, 1, 1]);
    expect(pages.flatMap((p) => p.ids)).toEqual(ids(mine));
  });

  it('filter by event and time range over both sources', async () => {
    const granted = await f.call('GET', `${LIST}?referenceId=${ref}&event=consent.granted`, {
      key: a.auditor,
    });
    expect(ids(granted.body.items)).toEqual(ids(mine.filter((d) => d.event === 'consent.granted')));
    const withdrawn = mine[2]!;
    const before = await f.call(
      'GET',
      `${LIST}?referenceId=${ref}&to=${encodeURIComponent(withdrawn.createdAt)}`,
      { key: a.auditor },
    );
    expect(ids(before.body.items)).toEqual(ids(mine.slice(0, 2)));
    const from = await f.call(
      'GET',
      `${LIST}?referenceId=${ref}&from=${encodeURIComponent(withdrawn.createdAt)}`,
      { key: a.auditor },
    );
    expect(ids(from.body.items)).toEqual([withdrawn.dispatchId]);
  });

  it('never shows another principal’s or another app’s', async () => {
    const two = await f.call('GET', `${LIST}?referenceId=${other}`, { key: a.auditor });
    expect(two.body.items.map((d: { referenceId: string }) => d.referenceId)).toEqual([
      other,
      other,
    ]);
    // App B's key, app A's referenceId: B has no such principal.
    const cross = await f.call('GET', `${LIST}?referenceId=${ref}`, { key: b.auditor });
    expect(cross.status).toBe(200);
    expect(cross.body.items).toEqual([]);
  });

  it('are in the export by referenceId, each with its entries', async () => {
    const got: string[] = [];
    const q = {
      appId: a.appId,
      referenceId: ref,
      from: new Date(Date.parse(mine[0]!.createdAt) - 60_000).toISOString(),
      to: new Date(Date.now() + 60_000).toISOString(),
    };
    for await (const d of exportDispatches(f.p.rt, q, { pageSize: 2 })) {
      expect(d.attempts).toHaveLength(1);
      got.push(d.dispatchId);
    }
    expect(got).toEqual(ids(mine));
  });
});
