import { TransactWriteCommand, UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ulid } from 'ulid';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerService } from '../../services/ledger/index.js';
import type { HandlerContext } from '../../shared/bus/consumer.js';
import type { PostbackMessage } from '../../shared/domain/compliance/postback.js';
import { createApiKey } from '../../shared/domain/apiKeys.js';
import { createApp } from '../../shared/domain/apps.js';
import type { EventType } from '../../shared/domain/consent/events.js';
import type { App } from '../../shared/domain/types.js';
import {
  dispatchPk,
  newDispatchItems,
  type DispatchState,
} from '../../shared/storage/ledger/dispatches.js';
import { dueEntry } from '../../shared/storage/timers/due.js';
import { getDispatch } from '../../shared/ledger/queries.js';
import type { RunningProcess } from '../../bin/process.js';
import { postbacksHandler } from '../../workers/compliance/handler.js';
import { complianceMetrics } from '../../workers/compliance/metrics.js';
import { client } from '../admin/client.js';
import { testProcess } from '../helpers/stack.js';
import { consentEvent } from '../postback/fixture.js';
import { ENCRYPTION_KEY } from './fixture.js';

/**
 * The compliance worker records a postback without reading the dispatch's other entries
 * again (one consistent read of the dispatch item), keeps the worst flag the dispatch ever
 * had, and the ledger API's `?flag=` finds a dispatch by its current or its worst flag.
 * DynamoDB requests are counted on the process's own client.
 */

let p: RunningProcess;
let app: App;
let ledgerKey: string;
let handle: ReturnType<typeof postbacksHandler>;
let nowMs = Date.now();
/** Requests to the ledger table, by command. */
const requests = new Map<string, number>();

beforeAll(async () => {
  p = await testProcess('postback-reads', [ledgerService], [], {
    SVC_ENCRYPTION_KEY: ENCRYPTION_KEY,
  });
  app = (
    await createApp(p.rt, {
      name: 'reads',
      environment: 'sandbox',
      webhookUrl: 'http://127.0.0.1:9/hooks',
      allowedOrigins: ['https://shop.example'],
      contactEmail: 'ops@shop.example',
    })
  ).app;
  ledgerKey = (await createApiKey(p.rt, app.appId, { name: 'audit', scopes: ['ledger:read'] })).key;
  handle = postbacksHandler(p.rt, { now: () => nowMs, metrics: complianceMetrics(p.rt.registry) });
  p.rt.dynamo.doc.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { TableName?: string };
      if (input.TableName === p.rt.tables.ledger) {
        const name = context.commandName ?? '?';
        requests.set(name, (requests.get(name) ?? 0) + 1);
      }
      return next(args);
    },
    { step: 'initialize', name: 'countLedgerRequests' },
  );
});
afterAll(async () => {
  await p?.close();
});

const ctx = (): HandlerContext => ({
  topic: p.rt.topics.postbacks,
  partition: 0,
  offset: '0',
  key: undefined,
  headers: {},
  log: p.rt.log,
});

async function dispatch(type: EventType, createdAt = new Date()): Promise<DispatchState> {
  const event = consentEvent(app.appId, type, createdAt);
  const created = newDispatchItems(p.rt, {
    event,
    body: JSON.stringify(event),
    endpoint: `${app.appId}:webhook`,
    nowMs: createdAt.getTime(),
    due: (id) => dueEntry(id, app.appId, Date.now() + 365 * 86_400_000, 'attempt', 1),
  });
  await p.rt.dynamo.doc.send(new TransactWriteCommand({ TransactItems: created.items }));
  return created.state;
}

let seq = 0;
function postback(d: DispatchState, over: Partial<PostbackMessage> = {}): PostbackMessage {
  const at = nowMs + ++seq;
  return {
    type: 'postback',
    dispatchId: d.dispatchId,
    referenceId: d.referenceId,
    status: 'processed',
    completedAt: new Date(at - 1000).toISOString(),
    risk: 'none',
    tags: [],
    actions: [{ type: 'stop_marketing', result: 'done' }],
    appId: app.appId,
    postbackId: `pb_${ulid(at)}`,
    receivedAt: new Date(at).toISOString(),
    ...over,
  };
}

/** DynamoDB commands are named by the base client (GetItemCommand, QueryCommand). */
const count = (re: RegExp) =>
  [...requests].filter(([name]) => re.test(name)).reduce((n, [, c]) => n + c, 0);
const reads = () => ({ query: count(/^Query/), get: count(/^Get/) });

const list = async (flag: string) =>
  (
    await client(p.url)('GET', `/api/v1/ledger/dispatches?flag=${flag}&limit=200`, undefined, {
      authorization: `Bearer ${ledgerKey}`,
    })
  ).body as { items: { dispatchId: string; complianceFlag: string; worstFlag: string }[] };

describe('the compliance worker reads one item per postback', () => {
  it('records postbacks without re-reading the entries of the dispatch', async () => {
    nowMs = Date.now();
    const d = await dispatch('consent.withdrawn', new Date(nowMs));
    await handle(
      { type: 'sla.check', dispatchId: d.dispatchId, at: new Date(nowMs).toISOString() },
      ctx(),
    );
    requests.clear();
    for (let i = 0; i < 5; i++)
      await handle(postback(d, { status: i % 2 ? 'partial' : 'processed' }), ctx());
    expect(reads()).toEqual({ query: 0, get: 5 });
    const stored = await getDispatch(p.rt, d.dispatchId);
    expect(stored!.postbacks).toHaveLength(5);
    expect(stored!.flagHistory.map((f) => f.flag)).toEqual([
      'ok',
      'at_risk',
      'ok',
      'at_risk',
      'ok',
    ]);
    // A redelivered postback is recognised from the dispatch item alone.
    requests.clear();
    const again = postback(d);
    await handle(again, ctx());
    await handle(again, ctx());
    expect(reads().query).toBe(0);
    expect((await getDispatch(p.rt, d.dispatchId))!.postbacks).toHaveLength(6);
  });

  it('reads a dispatch stored by an earlier version in full once, then from its item', async () => {
    nowMs = Date.now();
    const d = await dispatch('data.deleted', new Date(nowMs));
    await handle(postback(d, { status: 'deleted', risk: 'high' }), ctx());
    await handle(postback(d, { status: 'deleted', risk: 'low' }), ctx());
    // As an earlier version left it: no summary of postbacks, no worst flag.
    await p.rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: p.rt.tables.ledger,
        Key: { pk: dispatchPk(d.dispatchId), sk: 'DSP' },
        UpdateExpression: 'REMOVE postbackFacts, worstFlag',
      }),
    );
    requests.clear();
    await handle(postback(d, { status: 'deleted', risk: 'none' }), ctx());
    expect(reads().query).toBe(1);
    requests.clear();
    await handle(postback(d, { status: 'deleted', risk: 'none' }), ctx());
    expect(reads().query).toBe(0);
    const stored = (await getDispatch(p.rt, d.dispatchId)) as unknown as Record<string, unknown>;
    expect(stored.complianceFlag).toBe('ok');
    expect(stored.worstFlag).toBe('breach');
    expect((stored.postbacks as unknown[]).length).toBe(4);
  });
});

describe('worstFlag', () => {
  it('keeps the most severe flag ever, and ?flag= matches the current or the worst', async () => {
    nowMs = Date.now();
    const d = await dispatch('consent.withdrawn', new Date(nowMs));
    await handle(postback(d, { risk: 'critical' }), ctx());
    await handle(postback(d, { risk: 'none' }), ctx());
    const detail = await client(p.url)(
      'GET',
      `/api/v1/ledger/dispatches/${d.dispatchId}`,
      undefined,
      {
        authorization: `Bearer ${ledgerKey}`,
      },
    );
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ complianceFlag: 'ok', worstFlag: 'critical' });
    expect(detail.body.flagHistory.map((f: { flag: string }) => f.flag)).toEqual([
      'critical',
      'ok',
    ]);

    const critical = (await list('critical')).items.find((i) => i.dispatchId === d.dispatchId);
    expect(critical).toMatchObject({ complianceFlag: 'ok', worstFlag: 'critical' });
    expect((await list('ok')).items.some((i) => i.dispatchId === d.dispatchId)).toBe(true);
    expect((await list('breach')).items.some((i) => i.dispatchId === d.dispatchId)).toBe(false);
    expect((await list('none')).items.some((i) => i.dispatchId === d.dispatchId)).toBe(false);
  });
});
