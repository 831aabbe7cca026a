import { BatchWriteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { needsStamp } from '../../shared/storage/ledger/changes.js';
import {
  dispatchKey,
  recordedDispatches,
  stampLate,
} from '../../shared/storage/ledger/dispatches.js';
import { listDispatchesByApp } from '../../shared/ledger/queries.js';
import { sealClosedPeriods } from '../../shared/ledger/seal.js';
import type { Runtime } from '../../shared/runtime.js';
import { DynamoLedger } from '../../shared/storage/ledger/dynamo-ledger.js';
import { signingKeys } from '../../shared/signing/keys.js';
import { dispatcherMetrics } from '../../workers/dispatcher/metrics.js';
import { FirstAttemptWriter } from '../../workers/dispatcher/writer.js';
import { testRuntime } from '../helpers/stack.js';
import { deliveredFirstAttempt } from './helpers.js';

/**
 * The first-attempt writer's change stamps against DynamoDB Local (shared/storage/ledger/changes.ts):
 * a dispatch item goes without one when the sealer's first reading of its period will hold it,
 * and one that lands later than that is stamped before it is answered, so the sealer still
 * seals it again. Periods of one second, sealed two seconds after they close, no margin.
 */
let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('stamps', {
    LEDGER_CHECKPOINT_PERIOD_MS: '1000',
    LEDGER_CHECKPOINT_LAG_MS: '2000',
    LEDGER_CHANGE_STAMP_MARGIN_MS: '0',
  });
});
afterAll(async () => {
  await rt.close();
});

let apps = 0;
const newApp = () => ({ appId: `app_stamps${++apps}`, environment: 'sandbox' as const });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const record = (app: ReturnType<typeof newApp>, createdAt?: string) =>
  deliveredFirstAttempt(rt, app, createdAt);

type Rec = ReturnType<typeof record>;

async function stored(rec: Rec) {
  const r = await rt.dynamo.doc.send(
    new GetCommand({
      TableName: rt.tables.ledger,
      Key: dispatchKey(rec.dispatchId),
      ConsistentRead: true,
    }),
  );
  return r.Item;
}

/** A store whose BatchWriteItem requests wait `holdMs` before they reach DynamoDB Local. */
function heldStore(holdMs: () => number) {
  const puts: Record<string, unknown>[] = [];
  const doc = {
    send: async (command: unknown) => {
      if (command instanceof BatchWriteCommand) {
        for (const reqs of Object.values(command.input.RequestItems ?? {}))
          for (const r of reqs) if (r.PutRequest?.Item) puts.push(r.PutRequest.Item);
        await sleep(holdMs());
      }
      return rt.dynamo.doc.send(command as never);
    },
  } as unknown as typeof rt.dynamo.doc;
  const dynamo = { ...rt.dynamo, doc };
  // The ledger the writer writes through, on the held client.
  return { rt: { ...rt, dynamo, ledger: new DynamoLedger({ ...rt, dynamo }) } as Runtime, puts };
}

const writerOn = (r: Runtime) =>
  new FirstAttemptWriter(r, {
    metrics: dispatcherMetrics(rt.registry),
    log: rt.log,
    maxFlushes: 1,
  });

/** How many late stamps the dispatcher counted (`svc_webhook_ledger_late_stamps_total`). */
async function lateStamps(): Promise<number> {
  const m = await rt.registry.getSingleMetric('svc_webhook_ledger_late_stamps_total')?.get();
  return m?.values.reduce((sum, v) => sum + v.value, 0) ?? 0;
}

describe('change stamps of first attempts (fast mode)', () => {
  it('needsStamp: due once the landing time reaches the first sealing of the period, less the margin', () => {
    const c = {
      LEDGER_CHECKPOINT_PERIOD_MS: 1000,
      LEDGER_CHECKPOINT_LAG_MS: 2000,
      LEDGER_CHANGE_STAMP_MARGIN_MS: 500,
    };
    const created = '2026-01-01T00:00:00.250Z'; // period [0, 1000): first sealed at 3000
    const t0 = Date.parse('2026-01-01T00:00:00.000Z');
    expect(needsStamp(created, t0 + 2499, c)).toBe(false);
    expect(needsStamp(created, t0 + 2500, c)).toBe(true);
    expect(needsStamp('not a time', t0, c)).toBe(true);
  });

  it('stamps the first dispatch of an app and any near its sealing, and leaves the others out of the index', async () => {
    const app = newApp();
    const writer = writerOn(rt);
    const [first, second, third] = [record(app), record(app), record(app)];
    // Created 5 s ago: its period was sealed already (ended ≤ 4 s ago, plus 2 s).
    const old = record(app, new Date(Date.now() - 5_000).toISOString());
    expect(await writer.write(first, 'fast')).toBe('recorded');
    const results = await Promise.all([second, third, old].map((r) => writer.write(r, 'fast')));
    expect(results).toEqual(['recorded', 'recorded', 'recorded']);
    expect((await stored(first))?.gsi3pk).toMatch(/^CHG#/);
    expect(await stored(second)).not.toHaveProperty('gsi3pk');
    expect(await stored(third)).not.toHaveProperty('gsi3pk');
    // Left out of the change index, not out of the app's listing (gsi1 or a carrier).
    const listed = (await listDispatchesByApp(rt, app.appId)).items.map((d) => d.dispatchId);
    expect(listed.sort()).toEqual([first, second, third, old].map((r) => r.dispatchId).sort());
    expect((await stored(old))?.gsi3sk).toContain(old.dispatchId);
    // Another writer (another process) announces the app again with its own first dispatch.
    const other = record(app);
    expect(await writerOn(rt).write(other, 'fast')).toBe('recorded');
    expect((await stored(other))?.gsi3pk).toMatch(/^CHG#/);
  });

  it('a dispatch item that lands after its period was sealed is stamped before it is answered, and the sealer seals it again', async () => {
    const app = newApp();
    const keys = signingKeys(rt.config);
    let hold = 0;
    const held = heldStore(() => hold);
    const writer = writerOn(held.rt);
    const countedBefore = await lateStamps();
    // The app is announced (stamped), and its first period sealed.
    const first = record(app);
    expect(await writer.write(first, 'fast')).toBe('recorded');
    // Wait for a fresh period to start, so the late record's period closes 3 s from now.
    await sleep(1000 - (Date.now() % 1000) + 20);
    hold = 4_500;
    const late = record(app);
    const createdAt = String(late.head.createdAt);
    const answered = writer.write(late, 'fast');
    // While the write is held: the period of `late` closes and is sealed without it.
    await sleep(3_300);
    expect(await stored(late)).toBeUndefined();
    const before = await sealClosedPeriods(rt, keys, Date.now());
    const periodStart = new Date(Math.floor(Date.parse(createdAt) / 1000) * 1000).toISOString();
    const sealed = before?.checkpoints.find(
      (c) => c.appId === app.appId && c.periodStart === periodStart,
    );
    expect(sealed?.leafCount).toBe(0);
    expect(await answered).toBe('recorded');
    // Written without a stamp (not late when it was sent), then stamped once it landed.
    const put = held.puts.find((i) => i.pk === dispatchKey(late.dispatchId).pk);
    expect(put).toBeDefined();
    expect(put).not.toHaveProperty('gsi3pk');
    expect((await lateStamps()) - countedBefore).toBe(1);
    const stamp = String((await stored(late))?.gsi3sk);
    expect(stamp).toContain(late.dispatchId);
    // The sealer reads the change once the period it was stamped in is closed and lagged.
    const stampedIn = Date.parse(stamp.split('#')[0]!);
    await sleep(Math.max(0, stampedIn + 1000 + 2000 + 50 - Date.now()));
    const after = await sealClosedPeriods(rt, keys, Date.now());
    const resealed = after?.checkpoints.find(
      (c) => c.appId === app.appId && c.periodStart === periodStart,
    );
    expect(resealed).toMatchObject({ leafCount: 1, version: 2 });
    expect(after?.resealed).toBeGreaterThanOrEqual(1);
  }, 30_000);

  it('a recorded dispatch found unstamped once its period is sealed gets its stamp (what a redelivery after a crash does)', async () => {
    const app = newApp();
    const writer = writerOn(rt);
    await writer.write(record(app), 'fast'); // announces the app
    const rec = record(app);
    expect(await writer.write(rec, 'fast')).toBe('recorded');
    const id = rec.dispatchId;
    const found = await recordedDispatches(rt, [id]);
    expect(found.get(id)).toMatchObject({ stamped: false, appId: app.appId });
    // Not yet near its sealing: nothing to do.
    expect(await stampLate(rt, [found.get(id)!], Date.now())).toBe(0);
    expect(await stored(rec)).not.toHaveProperty('gsi3pk');
    // Past it: stamped once; a second call finds it stamped and writes nothing.
    const later = Date.now() + 5_000;
    expect(await stampLate(rt, [found.get(id)!], later)).toBe(1);
    expect(await stampLate(rt, [found.get(id)!], later)).toBe(0);
    expect((await recordedDispatches(rt, [id])).get(id)?.stamped).toBe(true);
  });
});
