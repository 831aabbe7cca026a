import { BatchWriteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import { newEventId, newReferenceId } from '../../shared/domain/ids.js';
import { firstAttemptRecord } from '../../shared/ledger/attempts.js';
import { dispatchItems, dispatchKey, newDispatchState } from '../../shared/ledger/dispatches.js';
import { PACKED_ATTR } from '../../shared/ledger/packed.js';
import {
  getDispatch,
  listDispatchesByApp,
  listDispatchesByReference,
  verifyDispatchChain,
} from '../../shared/ledger/queries.js';
import { redactDispatchBodies } from '../../shared/ledger/redact.js';
import type { Runtime } from '../../shared/runtime.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * A ledger holding dispatch items of both forms, as after a rolling upgrade: one written plain
 * (`LEDGER_PACK_DISPATCHES=false`, what an older version wrote) and one packed
 * (shared/ledger/packed.ts), for the same principal. Against DynamoDB Local, every reader gives
 * both the same shape: the listings by app and by principal (index entries), the dispatch with
 * its chain, verification, and the erasure's redaction of the stored bodies.
 */
let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('packedmix');
});
afterAll(async () => {
  await rt.close();
});

const app = { appId: 'app_packedMix1', environment: 'production' as const };
const referenceId = newReferenceId();

function event(): ConsentEvent {
  return {
    id: newEventId(),
    type: 'consent.granted',
    apiVersion: 'v1',
    createdAt: new Date().toISOString(),
    appId: app.appId,
    environment: app.environment,
    data: {
      referenceId,
      userId: 'user-packed-mixed',
      consentId: '01a221a5-cc26-748b-bb7f-8db53c7d5800',
      recordIds: ['01a221a5-cc26-748b-bb7f-8db53c7d5801'],
      purposes: { marketing: true },
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
    },
  } as unknown as ConsentEvent;
}

/** A first delivery's dispatch item, as the dispatcher writes it with packing on or off. */
async function deliver(pack: boolean): Promise<string> {
  const e = event();
  const nowMs = Date.now();
  const state = newDispatchState({
    event: e,
    body: JSON.stringify(e),
    endpoint: `${app.appId}:webhook`,
    nowMs,
  });
  const withPack = { ...rt, config: { ...rt.config, LEDGER_PACK_DISPATCHES: pack } } as Runtime;
  const rec = firstAttemptRecord(withPack, {
    state,
    nowMs,
    deliveryStatus: 'delivered',
    entry: {
      trigger: 'first',
      time: new Date(nowMs).toISOString(),
      durationMs: 4,
      destination: 'https://hooks.example.com/consent',
      statusCode: 200,
      responseExcerpt: '{"ok":true}',
      outcome: 'delivered',
    },
  });
  await rt.dynamo.doc.send(
    new BatchWriteCommand({
      RequestItems: { [rt.tables.ledger]: [{ PutRequest: { Item: rec.head } }] },
    }),
  );
  return rec.dispatchId;
}

const stored = async (id: string) =>
  (
    await rt.dynamo.doc.send(
      new GetCommand({ TableName: rt.tables.ledger, Key: dispatchKey(id), ConsistentRead: true }),
    )
  ).Item!;

describe('a ledger of plain and packed dispatch items', () => {
  let plain: string;
  let packed: string;
  beforeAll(async () => {
    plain = await deliver(false);
    packed = await deliver(true);
  });

  it('stores them in their own forms', async () => {
    expect(await stored(plain)).toHaveProperty('body');
    expect(await stored(plain)).not.toHaveProperty(PACKED_ATTR);
    expect(await stored(packed)).not.toHaveProperty('body');
    expect(await stored(packed)).toHaveProperty(PACKED_ATTR);
  });

  it('lists both alike, by app and by principal', async () => {
    for (const page of [
      await listDispatchesByApp(rt, app.appId),
      await listDispatchesByReference(rt, app.appId, referenceId),
    ]) {
      const byId = new Map(page.items.map((d) => [d.dispatchId, d]));
      const a = byId.get(plain)!;
      const b = byId.get(packed)!;
      expect(Object.keys(b).sort()).toEqual(Object.keys(a).sort());
      expect(b).toMatchObject({ complianceFlag: null, nextAttemptAt: null, postbackDueAt: null });
      const full = await getDispatch(rt, packed);
      expect(b.entryHash).toBe(full!.entryHash);
    }
  });

  it('reads and verifies both chains', async () => {
    for (const id of [plain, packed]) {
      const d = (await getDispatch(rt, id))!;
      expect(d.dispatchId).toBe(id);
      expect(d.attempts.map((x) => [x.attempt, x.statusCode, x.prevHash])).toEqual([
        [1, 200, d.entryHash],
      ]);
      expect(d.headHash).toBe(d.attempts[0]!.hash);
      expect(await verifyDispatchChain(rt, id)).toEqual({ ok: true, entries: 2 });
    }
  });

  it('redacts the user id from both stored bodies, and both chains still verify', async () => {
    expect(await redactDispatchBodies(rt, app.appId, referenceId, new Date())).toBe(2);
    for (const id of [plain, packed]) {
      const head = (await dispatchItems(rt, id))[0]!;
      expect(JSON.parse(String(head.body))).toMatchObject({ data: { referenceId, userId: null } });
      expect(await verifyDispatchChain(rt, id)).toEqual({ ok: true, entries: 2 });
    }
    // Packed again around the redacted body: the raw item holds no plain body.
    expect(await stored(packed)).not.toHaveProperty('body');
    expect(await stored(packed)).toHaveProperty('bodyRedactedAt');
    // Nothing is left to redact.
    expect(await redactDispatchBodies(rt, app.appId, referenceId, new Date())).toBe(0);
  });
});
