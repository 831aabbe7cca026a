import { PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Runtime } from '../../shared/runtime.js';
import { PROGRESS_PREFIX } from '../../shared/storage/outbox/commits.js';
import { takeGaugeLease } from '../../shared/storage/leases/gauge-lease.js';
import { putPresence, takeShard } from '../../shared/storage/leases/retry-leases.js';
import { advanceWatermark, ensureWatermark, timerKey } from '../../shared/storage/timers/due.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * svc_dynamodb_coordination_items_written_total counts, on DynamoDB Local, the writes of the
 * real lease, presence, watermark and writer-progress code, and nothing a record writes.
 */
let rt: Runtime;

beforeAll(async () => {
  rt = await testRuntime('coordination');
});

afterAll(async () => {
  await rt?.close();
});

async function counter(name: string): Promise<number> {
  const text = await rt.registry.getSingleMetricAsString(name);
  return text
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .reduce((n, l) => n + Number(l.split(' ').pop()), 0);
}

describe('coordination writes', () => {
  it('counts leases, presences, watermarks and progress items apart from records', async () => {
    const coordination = 'svc_dynamodb_coordination_items_written_total';
    const items = 'svc_dynamodb_items_written_total';
    const c0 = await counter(coordination);
    const i0 = await counter(items);
    const now = Date.now();
    expect(await takeGaugeLease(rt, 'owner-a', now, now + 30_000)).toBe(true);
    await putPresence(rt, 'owner-a', now + 30_000);
    expect(await takeShard(rt, 'owner-a', 3, now, now + 30_000)).toBe(true);
    await ensureWatermark(rt, 0, now, 'sla');
    await advanceWatermark(rt, 0, Math.floor(now / 60_000) + 5, 'sla');
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.outbox,
        Item: { id: `${PROGRESS_PREFIX}wtest`, watermark: now, heartbeatAt: now },
      }),
    );
    expect((await counter(coordination)) - c0).toBe(6);
    expect((await counter(items)) - i0).toBe(6);

    // A due entry and an outbox commit are records: counted as items, not as coordination.
    const entry = timerKey('sla', 'd_1', now + 60_000, 8);
    await rt.dynamo.doc.send(
      new PutCommand({ TableName: rt.tables.timers, Item: { ...entry, kind: 'sla' } }),
    );
    await rt.dynamo.doc.send(
      new PutCommand({ TableName: rt.tables.outbox, Item: { id: 'commit-1', messages: [] } }),
    );
    expect((await counter(coordination)) - c0).toBe(6);
    expect((await counter(items)) - i0).toBe(8);
  });
});
