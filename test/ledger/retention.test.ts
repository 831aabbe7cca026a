import { DescribeTimeToLiveCommand } from '@aws-sdk/client-dynamodb';
import { QueryCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postbackService } from '../../services/postback/index.js';
import {
  DEFAULT_RETENTION_DAYS,
  RETAIN_ATTR,
  retainUntil,
} from '../../shared/domain/ledger/retention.js';
import { complianceWorker } from '../../workers/compliance/index.js';
import { startLedgerProcess, type LedgerApp, type LedgerFixture } from './fixture.js';

/**
 * Ledger retention (docs/retention.md) against the real stack: the app setting is never below a
 * year; every ledger item a real consent change leads to (the dispatch, its attempts, a postback
 * and its flag change) carries the TTL attribute its app's retention gives, counted from when the
 * item was last written; the ledger table has TTL on; and the TTL attribute is in no API view
 * and no hash (the chains still verify).
 */

let f: LedgerFixture;

beforeAll(async () => {
  f = await startLedgerProcess('ledger-retention', {
    services: [postbackService],
    workers: [complianceWorker],
  });
});
afterAll(async () => {
  await f?.close();
});

async function patchApp(appId: string, body: unknown) {
  const r = await fetch(`${f.p.url}/api/v1/admin/apps/${appId}`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${f.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  // Problem and app bodies are asserted field by field.
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { status: r.status, body: (await r.json()) as any };
}

/** Every raw item of a dispatch's partition in the ledger table. */
async function ledgerItems(dispatchId: string) {
  const r = await f.p.rt.dynamo.doc.send(
    new QueryCommand({
      TableName: f.p.rt.tables.ledger,
      KeyConditionExpression: 'pk = :pk',
      ExpressionAttributeValues: { ':pk': `DSP#${dispatchId}` },
      ConsistentRead: true,
    }),
  );
  return r.Items ?? [];
}

/** The app's dispatch ids by event type. */
async function dispatchesOf(a: LedgerApp): Promise<Record<string, string>> {
  const list = await f.call('GET', '/api/v1/ledger/dispatches?limit=50', { key: a.auditor });
  return Object.fromEntries(
    list.body.items.map((d: { event: string; dispatchId: string }) => [d.event, d.dispatchId]),
  );
}

describe('ledger retention', () => {
  it('refuses a setting below a year (422 naming the rule) and keeps the app as it was', async () => {
    const a = await f.createApp('refused');
    for (const days of [365, 30, 0, -5, 400.5, 3651, '400']) {
      const r = await patchApp(a.appId, { ledgerRetentionDays: days });
      expect(r.status, JSON.stringify(days)).toBe(422);
      expect(r.body.code).toBe('SVC_VALIDATION_FAILED');
      expect(r.body.errors[0].path).toBe('/ledgerRetentionDays');
    }
    const short = await patchApp(a.appId, { ledgerRetentionDays: 365 });
    expect(short.body.errors[0].message).toBe(
      'must be at least 366 days: ledger entries, postbacks and delivery logs are kept at least one year (366 days, so a leap year is covered)',
    );
    const created = await fetch(`${f.p.url}/api/v1/admin/apps`, {
      method: 'POST',
      headers: { authorization: `Bearer ${f.adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        name: 'Too short',
        environment: 'sandbox',
        webhookUrl: 'http://127.0.0.1:9/hook',
        allowedOrigins: [],
        contactEmail: 'dpo@shop.example',
        ledgerRetentionDays: 180,
      }),
    });
    expect(created.status).toBe(422);
    const now = await fetch(`${f.p.url}/api/v1/admin/apps/${a.appId}`, {
      headers: { authorization: `Bearer ${f.adminToken}` },
    });
    expect(((await now.json()) as { ledgerRetentionDays: number }).ledgerRetentionDays).toBe(
      DEFAULT_RETENTION_DAYS,
    );
  });

  it('the ledger table has DynamoDB TTL on retainUntil', async () => {
    const d = await f.p.rt.dynamo.client.send(
      new DescribeTimeToLiveCommand({ TableName: f.p.rt.tables.ledger }),
    );
    expect(d.TimeToLiveDescription).toMatchObject({
      TimeToLiveStatus: 'ENABLED',
      AttributeName: RETAIN_ATTR,
    });
  });

  it('every ledger item carries the TTL of its app’s retention, from when it was written', async () => {
    const kept = await f.createApp('kept');
    const patched = await patchApp(kept.appId, { ledgerRetentionDays: 800 });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.ledgerRetentionDays).toBe(800);
    const plain = await f.createApp('plain');

    const before = Date.now();
    const ref = await f.consent(kept, 'user-1', { marketing: true });
    const put = await f.call('PUT', '/api/v1/consents/user-1', {
      key: kept.writer,
      body: { consents: { marketing: false } },
    });
    expect(put.status, put.text).toBe(200);
    await f.consent(plain, 'user-1', { marketing: true });
    await f.settle(kept, 3);
    await f.settle(plain, 2);
    const withdrawn = (await dispatchesOf(kept))['consent.withdrawn']!;
    const pb = await fetch(`${f.p.url}/api/v1/server/consent/action`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-secret-key': kept.secretKey },
      body: JSON.stringify({
        dispatchId: withdrawn,
        referenceId: ref,
        status: 'processed',
        completedAt: new Date().toISOString(),
        risk: 'medium',
      }),
    });
    expect(pb.status, await pb.text()).toBe(202);
    await vi.waitFor(
      async () => {
        const items = await ledgerItems(withdrawn);
        expect(items.filter((i) => String(i.sk).startsWith('PB#'))).toHaveLength(1);
        expect(items.filter((i) => String(i.sk).startsWith('FLAG#'))).toHaveLength(1);
      },
      { timeout: 15_000, interval: 100 },
    );
    const after = Date.now();

    const within = (item: Record<string, unknown>, days: number) => {
      expect(typeof item[RETAIN_ATTR], String(item.sk)).toBe('number');
      expect(item[RETAIN_ATTR], String(item.sk)).toBeGreaterThanOrEqual(retainUntil(before, days));
      expect(item[RETAIN_ATTR], String(item.sk)).toBeLessThanOrEqual(retainUntil(after, days));
    };
    // The app's 800 days: the dispatch written before its first attempt (which holds its
    // attempt entries since), the postback, the flag change; and the dispatch item moved on
    // with the last write.
    const sks: string[] = [];
    for (const id of Object.values(await dispatchesOf(kept)))
      for (const item of await ledgerItems(id)) {
        within(item, 800);
        sks.push(String(item.sk).split('#')[0]!);
      }
    expect(new Set(sks)).toEqual(new Set(['DSP', 'PB', 'FLAG']));
    const items = await ledgerItems(withdrawn);
    const head = items.find((i) => i.sk === 'DSP')!;
    expect(head.attemptLog).toHaveLength(1);
    expect(head[RETAIN_ATTR]).toBe(Math.max(...items.map((i) => Number(i[RETAIN_ATTR]))));
    // An app that never set it: the default.
    for (const id of Object.values(await dispatchesOf(plain)))
      for (const item of await ledgerItems(id)) within(item, DEFAULT_RETENTION_DAYS);

    // Not part of any view or hash: the API never shows it and every chain still verifies.
    for (const id of Object.values(await dispatchesOf(kept))) {
      const detail = await f.call('GET', `/api/v1/ledger/dispatches/${id}`, { key: kept.auditor });
      expect(detail.status).toBe(200);
      expect(detail.text).not.toContain(RETAIN_ATTR);
      const check = await f.call('GET', `/api/v1/ledger/dispatches/${id}/verify`, {
        key: kept.auditor,
      });
      expect(check.body, check.text).toMatchObject({ ok: true, failures: [] });
    }
  });
});
