import { randomBytes } from 'node:crypto';
import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminService } from '../../services/admin/index.js';
import { noticeBody as noticeSchema } from '../../services/admin/schemas.js';
import { widgetService } from '../../services/widget/index.js';
import { createApp, markWidgetVerified } from '../../shared/domain/apps.js';
import { createNotice } from '../../shared/domain/notices.js';
import type { RunningProcess } from '../../bin/process.js';
import { client } from '../admin/client.js';
import { noticeBody } from '../consent/fixture.js';
import { testProcess } from '../helpers/stack.js';

/**
 * `widgetVerifiedAt` is written at most once a minute per (app, origin): a stream of config
 * calls, which anyone can send with an allowlisted Origin, is not a stream of DynamoDB
 * writes. Writes are counted on the service's own DynamoDB client.
 */

const A = 'https://shop.example';
const B = 'https://www.shop.example';
let p: RunningProcess;
let http: ReturnType<typeof client>;
/** UpdateItem requests that set widgetVerifiedAt, by app id. */
const writes = new Map<string, number>();

beforeAll(async () => {
  p = await testProcess('widget-verified', [adminService, widgetService], [], {
    SVC_ADMIN_TOKEN: `verified-${randomBytes(12).toString('hex')}`,
  });
  http = client(p.url);
  p.rt.dynamo.doc.middlewareStack.add(
    (next, context) => async (args) => {
      const input = args.input as { UpdateExpression?: string; Key?: { pk?: string } };
      if (
        /^Update(Item)?Command$/.test(context.commandName ?? '') &&
        input.UpdateExpression?.includes('widgetVerifiedAt')
      ) {
        const appId = String(input.Key?.pk).replace(/^APP#/, '');
        writes.set(appId, (writes.get(appId) ?? 0) + 1);
      }
      return next(args);
    },
    { step: 'initialize', name: 'countVerifiedWrites' },
  );
});
afterAll(async () => {
  await p?.close();
});

async function app() {
  const { app: created } = await createApp(p.rt, {
    name: 'Shop',
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hook',
    allowedOrigins: [A, B],
    contactEmail: 'dpo@shop.example',
  });
  await createNotice(
    p.rt,
    created.appId,
    noticeSchema.parse(noticeBody('signup', [{ name: 'marketing' }])),
  );
  return created;
}

async function stored(appId: string) {
  const r = await p.rt.dynamo.doc.send(
    new GetCommand({ TableName: p.rt.tables.entities, Key: { pk: `APP#${appId}`, sk: 'APP' } }),
  );
  return r.Item!;
}

const config = (siteKey: string, origin: string) =>
  http('GET', '/api/v1/widget/config/signup', undefined, { 'x-site-key': siteKey, origin });

describe('widgetVerifiedAt', () => {
  it('config calls write it at most once a minute per origin', async () => {
    const a = await app();
    for (let i = 0; i < 25; i++) {
      expect((await config(a.siteKey, A)).status).toBe(200);
      expect((await config(a.siteKey, B)).status).toBe(200);
    }
    // Refused origins never write.
    expect((await config(a.siteKey, 'https://evil.example')).status).toBe(403);
    expect(writes.get(a.appId)).toBe(2);
    const item = await stored(a.appId);
    expect(Date.parse(String(item.widgetVerifiedAt))).toBeGreaterThan(Date.now() - 60_000);
    expect(item.widgetVerifiedOrigin).toBe(A);
  });

  it('records again once the minute has passed', async () => {
    const a = await app();
    const t0 = Date.now();
    await markWidgetVerified(p.rt, a.appId, A, new Date(t0));
    await markWidgetVerified(p.rt, a.appId, A, new Date(t0 + 30_000));
    await markWidgetVerified(p.rt, a.appId, A, new Date(t0 + 59_999));
    expect(writes.get(a.appId)).toBe(1);
    expect((await stored(a.appId)).widgetVerifiedAt).toBe(new Date(t0).toISOString());
    await markWidgetVerified(p.rt, a.appId, B, new Date(t0 + 61_000));
    expect(writes.get(a.appId)).toBe(2);
    expect(await stored(a.appId)).toMatchObject({
      widgetVerifiedAt: new Date(t0 + 61_000).toISOString(),
      widgetVerifiedOrigin: B,
    });
  });
});
