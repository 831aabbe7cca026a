import { BatchWriteCommand, GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ConsentEvent } from '../../shared/domain/consent/events.js';
import { newEventId, newReferenceId } from '../../shared/domain/ids.js';
import { firstAttemptRecord } from '../../shared/storage/ledger/attempts.js';
import {
  dispatchItems,
  dispatchKey,
  newDispatchState,
} from '../../shared/storage/ledger/dispatches.js';
import { PACKED_ATTR } from '../../shared/storage/ledger/packed.js';
import { DISPATCH_VIEW_ATTRS } from '../../infra/definitions/tables.js';
import {
  getDispatch,
  listDispatchesByApp,
  listDispatchesByReference,
  verifyDispatchChain,
} from '../../shared/ledger/queries.js';
import { redactDispatchBodies } from '../../shared/storage/ledger/redact.js';
import type { Runtime } from '../../shared/runtime.js';
import { testRuntime } from '../helpers/stack.js';

/**
 * Packed dispatch items (shared/storage/ledger/packed.ts) through every reader, against DynamoDB Local:
 * the listings by app and by principal (index entries) show every view field, the dispatch
 * reads back with its chain and verifies, and the erasure's redaction packs the redacted body
 * again.
 */
let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('packedread');
});
afterAll(async () => {
  await rt.close();
});

const app = { appId: 'app_packedRead1', environment: 'production' as const };
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
      userId: 'user-packed-readers',
      consentId: '01a221a5-cc26-748b-bb7f-8db53c7d5800',
      recordIds: ['01a221a5-cc26-748b-bb7f-8db53c7d5801'],
      purposes: { marketing: true },
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
    },
  } as unknown as ConsentEvent;
}

/** A first delivery's dispatch item, as the dispatcher writes it. */
async function deliver(): Promise<string> {
  const e = event();
  const nowMs = Date.now();
  const state = newDispatchState({
    event: e,
    body: JSON.stringify(e),
    endpoint: `${app.appId}:webhook`,
    nowMs,
  });
  const rec = firstAttemptRecord(rt, {
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

describe('packed dispatch items', () => {
  let ids: string[];
  beforeAll(async () => {
    ids = [await deliver(), await deliver()];
  });

  it('are stored with neither body nor first attempt beside the packed attribute', async () => {
    for (const id of ids) {
      const item = await stored(id);
      expect(item).toHaveProperty(PACKED_ATTR);
      for (const gone of ['body', 'firstAttempt', 'type', 'prevHash', 'entryHash', 'dispatchId'])
        expect(item).not.toHaveProperty(gone);
    }
  });

  it('are listed with every view field, by app and by principal', async () => {
    for (const page of [
      await listDispatchesByApp(rt, app.appId),
      await listDispatchesByReference(rt, app.appId, referenceId),
    ]) {
      expect(page.items.map((d) => d.dispatchId).sort()).toEqual([...ids].sort());
      for (const d of page.items) {
        const full = (await getDispatch(rt, d.dispatchId))!;
        expect(Object.keys(d).sort()).toEqual(
          [
            ...DISPATCH_VIEW_ATTRS.filter((k) => k !== 'attempts' && k !== 'worstFlag'),
            'attemptCount',
          ].sort(),
        );
        expect(d).toMatchObject({ complianceFlag: null, nextAttemptAt: null, postbackDueAt: null });
        expect(d.entryHash).toBe(full.entryHash);
        expect(d.headHash).toBe(full.headHash);
      }
    }
  });

  it('read back with their chains, which verify', async () => {
    for (const id of ids) {
      const d = (await getDispatch(rt, id))!;
      expect(d.dispatchId).toBe(id);
      expect(d.attempts.map((x) => [x.attempt, x.statusCode, x.prevHash])).toEqual([
        [1, 200, d.entryHash],
      ]);
      expect(d.headHash).toBe(d.attempts[0]!.hash);
      expect(await verifyDispatchChain(rt, id)).toEqual({ ok: true, entries: 2 });
    }
  });

  it('have the user id redacted from their bodies, packed again, and still verify', async () => {
    expect(await redactDispatchBodies(rt, app.appId, referenceId, new Date())).toBe(2);
    for (const id of ids) {
      const head = (await dispatchItems(rt, id))[0]!;
      expect(JSON.parse(String(head.body))).toMatchObject({ data: { referenceId, userId: null } });
      expect(await verifyDispatchChain(rt, id)).toEqual({ ok: true, entries: 2 });
      expect(await stored(id)).not.toHaveProperty('body');
      expect(await stored(id)).toHaveProperty('bodyRedactedAt');
    }
    // Nothing is left to redact.
    expect(await redactDispatchBodies(rt, app.appId, referenceId, new Date())).toBe(0);
  });
});
