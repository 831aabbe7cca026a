import { GetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cancellationReasons } from '../../shared/storage/dynamo.js';
import { GroupCommit, type TransactItem } from '../../shared/storage/group-commit.js';
import type { Runtime } from '../../shared/runtime.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * Group commit against DynamoDB Local: concurrent writes share TransactWriteItems requests,
 * and a refused write gets its own reasons while the others of its group land.
 */
let rt: Runtime;

beforeAll(async () => {
  rt = await testRuntime('group-commit');
});
afterAll(async () => {
  await rt.close();
});

const keyAttributes = () => ['pk', 'sk'];

/** One write as the consent writer makes it: a new item, and a second one only if absent. */
function write(id: string, claim = `claim#${id}`): TransactItem[] {
  return [
    {
      Put: {
        TableName: rt.tables.entities,
        Item: { pk: `gc#${id}`, sk: 'v', n: 1 },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Put: {
        TableName: rt.tables.entities,
        Item: { pk: claim, sk: 'v', by: id },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ];
}

async function exists(pk: string) {
  const r = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.entities, Key: { pk, sk: 'v' }, ConsistentRead: true }),
  );
  return r.Item;
}

/** Counts the TransactWriteItems requests and their sizes, sending them for real. */
function counting() {
  const sizes: number[] = [];
  const send = (items: TransactItem[]) => {
    sizes.push(items.length);
    return rt.dynamo.doc.send(
      new TransactWriteCommand({ TransactItems: items, ClientRequestToken: randomUUID() }),
    );
  };
  return { sizes, send };
}

describe('group commit of TransactWriteItems', () => {
  it('a queued write whose signal aborts leaves unsent and is refused; one in flight lands', async () => {
    const c = counting();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    // The first transaction is held at the door, so the next write waits in the queue.
    const send = async (items: TransactItem[]) => {
      if (c.sizes.length === 0) await held;
      return c.send(items);
    };
    const registry = new Registry();
    const g = new GroupCommit(send, { maxInFlight: 1, keyAttributes, registry });
    const [first, queued, kept] = [randomUUID(), randomUUID(), randomUUID()];
    const gone = new AbortController();
    const a = g.write(write(first));
    const b = g.write(write(queued), gone.signal);
    const k = g.write(write(kept), new AbortController().signal);
    gone.abort();
    await expect(b).rejects.toMatchObject({ code: 'SVC_UNAVAILABLE' });
    release();
    await Promise.all([a, k]);
    expect(c.sizes).toEqual([2, 2]); // the first, then only the kept write
    expect(await exists(`gc#${first}`)).toBeDefined();
    expect(await exists(`gc#${kept}`)).toBeDefined();
    expect(await exists(`gc#${queued}`)).toBeUndefined();
    expect(await exists(`claim#${queued}`)).toBeUndefined();
    // A signal aborted before the write never queues it.
    await expect(g.write(write(randomUUID()), AbortSignal.abort())).rejects.toMatchObject({
      code: 'SVC_UNAVAILABLE',
    });
    expect(c.sizes).toEqual([2, 2]);
    expect(
      await registry.getSingleMetricAsString('svc_dynamodb_group_commit_abandoned_total'),
    ).toMatch(/^svc_dynamodb_group_commit_abandoned_total 2$/m);
  });

  it('sends writes made while one is in flight together, and lands every one', async () => {
    const c = counting();
    const g = new GroupCommit(c.send, { maxInFlight: 1, keyAttributes });
    const ids = Array.from({ length: 30 }, () => randomUUID());
    await Promise.all(ids.map((id) => g.write(write(id))));
    // The first leaves alone; the 29 queued behind it fit in one request of 58 items.
    expect(c.sizes).toEqual([2, 58]);
    for (const id of ids) {
      expect(await exists(`gc#${id}`)).toMatchObject({ n: 1 });
      expect(await exists(`claim#${id}`)).toMatchObject({ by: id });
    }
  });

  it('never puts more than 100 items, or one item twice, in a request', async () => {
    const c = counting();
    const g = new GroupCommit(c.send, { maxInFlight: 1, keyAttributes });
    const shared = `claim#shared-${randomUUID()}`;
    const first = g.write(write(randomUUID()));
    // 60 writes of 2 items: 50 fit in a request of 100. Two of them claim the same item: the
    // second waits for a later request (where its condition then fails).
    const rest = Array.from({ length: 60 }, (_, i) =>
      g.write(write(randomUUID(), i === 3 || i === 40 ? shared : undefined)).then(
        () => 'ok',
        (err: unknown) => cancellationReasons(err),
      ),
    );
    await first;
    const outcomes = await Promise.all(rest);
    expect(Math.max(...c.sizes)).toBeLessThanOrEqual(100);
    expect(c.sizes.slice(1).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(120);
    expect(outcomes[3]).toBe('ok');
    // Refused alone, as if it had been sent by itself: its claim (index 1) failed.
    expect(outcomes[40]).toEqual({ failed: new Set([1]), contention: false });
    expect(outcomes.filter((o) => o === 'ok')).toHaveLength(59);
  });

  it('refuses only the write whose condition failed; the rest of its group lands', async () => {
    const c = counting();
    const g = new GroupCommit(c.send, { maxInFlight: 1, keyAttributes });
    const taken = `claim#taken-${randomUUID()}`;
    await g.write(write(randomUUID(), taken));
    const blocker = g.write(write(randomUUID()));
    const ids = Array.from({ length: 10 }, () => randomUUID());
    const results = ids.map((id, i) =>
      g.write(write(id, i === 6 ? taken : undefined)).then(
        () => 'ok' as const,
        (err: unknown) => err as Error & { CancellationReasons: { Code: string }[] },
      ),
    );
    await blocker;
    const settled = await Promise.all(results);
    const refused = settled[6]!;
    expect(refused).not.toBe('ok');
    if (refused === 'ok') return;
    expect(refused.name).toBe('TransactionCanceledException');
    expect(refused.CancellationReasons.map((r) => r.Code)).toEqual([
      'None',
      'ConditionalCheckFailed',
    ]);
    expect(settled.filter((s) => s === 'ok')).toHaveLength(9);
    // Nothing of the refused write was applied; everything of the others was.
    expect(await exists(`gc#${ids[6]}`)).toBeUndefined();
    for (const [i, id] of ids.entries())
      if (i !== 6) expect(await exists(`gc#${id}`)).toBeDefined();
    // Its group was sent once with all ten, then the nine again.
    expect(c.sizes.slice(2)).toEqual([20, 18]);
  });

  it('gives a request the store refuses as a whole to each write alone', async () => {
    const c = counting();
    const g = new GroupCommit(c.send, { maxInFlight: 1, keyAttributes });
    const blocker = g.write(write(randomUUID()));
    const good = randomUUID();
    const bad: TransactItem[] = [
      // An empty key attribute: DynamoDB Local refuses the request (ValidationException).
      { Put: { TableName: rt.tables.entities, Item: { pk: '', sk: 'v' } } },
    ];
    const a = g.write(write(good));
    const b = g.write(bad).then(
      () => 'ok',
      (err: unknown) => (err as Error).name,
    );
    await blocker;
    await a;
    expect(await b).toBe('ValidationException');
    expect(await exists(`gc#${good}`)).toBeDefined();
    expect(c.sizes).toEqual([2, 3, 2, 1]);
  });
});
