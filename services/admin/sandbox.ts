import express, { type Express, type Request, type RequestHandler, type Router } from 'express';
import { z } from 'zod';
import { POSTBACK_RISKS, POSTBACK_STATUSES } from '../../shared/domain/compliance/flags.js';
import { postbackReceipt } from '../../shared/domain/compliance/postback.js';
import { getApp, getAppSecretKey } from '../../shared/domain/apps.js';
import { safeEqual } from '../../shared/domain/crypto.js';
import { patterns } from '../../shared/domain/ids.js';
import {
  INBOX_HEADERS,
  INBOX_MAX_BODY_BYTES,
  INBOX_SLOTS,
  INBOX_UNSIGNED_SLOTS,
  listInbox,
  storeInboxDelivery,
} from '../../shared/domain/observations.js';
import {
  sandboxOnly,
  sendTestEvent,
  simulatePostback,
  simulatePostbackBody,
  testEventBody,
} from '../../shared/sandbox/tools.js';
import { AppError } from '../../shared/errors.js';
import { requireAdmin } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { BucketMap, clientAddress, rateLimit } from '../../shared/http/ratelimit.js';
import { rawBodyOf } from '../../shared/http/raw-body.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';
import { sign } from '../../shared/webhooks/signer.js';
import { loadApp } from './apps.js';
import { ADMIN_PREFIX } from './prefix.js';

/**
 * Sandbox tools (docs/api.md, Sandbox tools), for sandbox apps only (a live app: 409):
 *
 * - test events: one event of any type, signed by the dispatcher's signing code
 *   (shared/webhooks/signer.ts) and sent through its HTTP client and SSRF guard to the app's
 *   webhook URL, synchronously; the outcome is kept for the checklist;
 * - the webhook inbox: `POST /sandbox/inbox/{appId}` takes deliveries (an app may use it as its
 *   webhook URL) and keeps the newest, each with its signature checked against the app's
 *   current secret key; the admin API lists them;
 * - the postback simulator: a postback for one of the app's dispatches, accepted through the
 *   postback API's own code, answered with the flag once the compliance worker applied it.
 *
 * The test events and the simulator are shared/sandbox/tools.ts (the console calls them
 * too); this file parses, answers and documents, and serves the inbox.
 */

export const INBOX_PATH = '/sandbox/inbox';

/** Standard Webhooks' tolerance for the signed timestamp. */
const TIMESTAMP_TOLERANCE_S = 5 * 60;

const testEventAnswer = z.object({
  status: z.number().nullable(),
  ok: z.boolean(),
  durationMs: z.number(),
  signatureValid: z.boolean(),
  webhookId: z.string(),
  eventId: z.string(),
  error: z.string().optional(),
});

const inboxItem = z.object({
  seq: z.number(),
  receivedAt: z.string(),
  headers: z.record(z.string(), z.string()),
  body: z.string(),
  signatureValid: z.boolean(),
});

const errors = {
  401: { description: 'Missing or wrong admin token' },
  404: { description: 'Unknown app' },
  409: { description: 'The app is live: sandbox tools are for sandbox apps only' },
};

/** Whether any `v1,` signature of the header is the body's under the secret key. */
export function signatureMatches(
  secretKey: string,
  headers: Record<string, string>,
  body: string,
  nowS: number,
): boolean {
  const id = headers['webhook-id'];
  const ts = Number(headers['webhook-timestamp']);
  const given = headers['webhook-signature'];
  if (!id || !given || !Number.isInteger(ts)) return false;
  if (Math.abs(nowS - ts) > TIMESTAMP_TOLERANCE_S) return false;
  const expected = sign(secretKey, id, ts, body);
  let match = false;
  // Every candidate is compared, so the time taken does not tell which one matched.
  for (const candidate of given.split(' ')) if (safeEqual(candidate, expected)) match = true;
  return match;
}

/** The body of an inbox delivery as received: the raw JSON bytes, or the raw body of another type. */
function receivedBody(req: Request): Buffer {
  if (Buffer.isBuffer(req.body)) return req.body;
  return rawBodyOf(req) ?? Buffer.alloc(0);
}

/**
 * The inbox takes unauthenticated writes, so it has budgets of its own, far below the API's
 * (fixed, per process): per client address, and per app whoever sends.
 */
export const INBOX_LIMITS = {
  perAddress: { rps: 5, burst: 20 },
  perApp: { rps: 10, burst: 40 },
} as const;

function limitInbox(): RequestHandler {
  const byAddress = new BucketMap(INBOX_LIMITS.perAddress.rps, INBOX_LIMITS.perAddress.burst);
  const byApp = new BucketMap(INBOX_LIMITS.perApp.rps, INBOX_LIMITS.perApp.burst, 10_000);
  return (req, _res, next) => {
    const now = Date.now();
    const wait =
      byAddress.take(clientAddress(req), now) || byApp.take(String(req.params.appId), now);
    if (wait === 0) return next();
    next(
      new AppError('SVC_RATE_LIMITED', 'Rate limit exceeded for the sandbox inbox', {
        retryAfterS: Math.max(1, Math.ceil(wait / 1000)),
      }),
    );
  };
}

/** The inbox route (outside the admin prefix: the dispatcher posts to it like to any endpoint). */
export function mountInbox(app: Express, rt: Runtime): void {
  const notFound = () => new AppError('SVC_NOT_FOUND', 'No inbox for this app');
  app.post(
    `${INBOX_PATH}/:appId`,
    limitInbox(),
    rateLimit(rt),
    // JSON bodies were read by the shared parser (raw bytes kept); any other type is read here.
    express.raw({ type: () => true, limit: INBOX_MAX_BODY_BYTES }),
    async (req, res) => {
      const appId = req.params.appId as string;
      if (!patterns.appId.test(appId)) throw notFound();
      // Both reads at once (an unknown app's secret read fails, and is not waited for).
      const secret = getAppSecretKey(rt, { appId });
      secret.catch(() => undefined);
      const target = await getApp(rt, appId);
      // A live app has no inbox, and answers exactly like an unknown one.
      if (!target || target.environment !== 'sandbox') throw notFound();
      const raw = receivedBody(req);
      if (raw.length > INBOX_MAX_BODY_BYTES)
        throw new AppError(
          'SVC_PAYLOAD_TOO_LARGE',
          `The inbox keeps bodies of up to ${INBOX_MAX_BODY_BYTES} bytes`,
        );
      const headers: Record<string, string> = {};
      for (const h of INBOX_HEADERS) {
        const v = req.get(h);
        if (v !== undefined) headers[h] = v.slice(0, 1024);
      }
      const body = raw.toString('utf8');
      const secretKey = await secret;
      const signatureValid = signatureMatches(
        secretKey,
        headers,
        body,
        Math.floor(Date.now() / 1000),
      );
      const d = await storeInboxDelivery(rt, appId, {
        receivedAt: new Date().toISOString(),
        headers,
        body,
        signatureValid,
      });
      // Kept either way, so the console shows it; answered as a receiver that verifies
      // signatures answers (a mis-signed test event is refused, as the checklist expects).
      if (!signatureValid)
        throw new AppError(
          'SVC_UNAUTHORIZED',
          `The signature does not verify with the app's current secret key (kept as delivery ${d.seq})`,
        );
      res.json({ received: true, seq: d.seq, signatureValid });
    },
  );
  rt.docs.add({
    method: 'post',
    path: `${INBOX_PATH}/{appId}`,
    summary:
      'The sandbox webhook inbox: a sandbox app may use this as its webhook URL; each delivery is kept with its signature check, and one that does not verify is answered 401',
    tag: 'sandbox',
    responses: {
      200: {
        description: 'Kept',
        schema: z.object({ received: z.boolean(), seq: z.number(), signatureValid: z.boolean() }),
      },
      401: { description: 'Kept, but its signature does not verify with the app’s secret key' },
      404: { description: 'Unknown app, or a live app' },
      413: { description: `Body over ${INBOX_MAX_BODY_BYTES} bytes` },
      429: { description: 'Over the inbox’s budget for this address or app' },
    },
  });
}

export function mountSandboxRoutes(router: Router, rt: Runtime): void {
  const admin = requireAdmin(rt);
  const write = [admin, rateLimit(rt), idempotency(rt, 'admin')];
  const doc = (d: Omit<Parameters<Runtime['docs']['add']>[0], 'tag' | 'security'>) =>
    rt.docs.add({ ...d, path: `${ADMIN_PREFIX}${d.path}`, tag: 'admin', security: ['admin'] });

  router.post('/apps/:appId/sandbox/test-events', ...write, async (req, res) => {
    const body = parseBody(testEventBody, req.body);
    const app = sandboxOnly(await loadApp(rt, req.params.appId as string));
    const answer = await sendTestEvent(rt, app, body.type, body.badSignature);
    rt.log.info(
      { appId: app.appId, type: body.type, badSignature: body.badSignature, status: answer.status },
      'test event sent',
    );
    res.json(answer);
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/sandbox/test-events',
    summary:
      'Send a signed (or deliberately mis-signed) test event of any type to the app’s webhook URL now',
    body: testEventBody,
    responses: {
      200: { description: 'What the endpoint answered', schema: testEventAnswer },
      ...errors,
      422: { description: 'Invalid body' },
    },
  });

  router.get('/apps/:appId/sandbox/inbox', admin, async (req, res) => {
    const app = sandboxOnly(await loadApp(rt, req.params.appId as string));
    res.json({ items: await listInbox(rt, app.appId) });
  });
  doc({
    method: 'get',
    path: '/apps/{appId}/sandbox/inbox',
    summary: `The deliveries the app’s sandbox inbox received, newest first (the last ${INBOX_SLOTS} that verify and ${INBOX_UNSIGNED_SLOTS} that do not)`,
    responses: {
      200: { description: 'Deliveries', schema: z.object({ items: z.array(inboxItem) }) },
      ...errors,
    },
  });

  router.post('/apps/:appId/sandbox/postbacks', ...write, async (req, res) => {
    const sim = parseBody(simulatePostbackBody, req.body);
    const app = sandboxOnly(await loadApp(rt, req.params.appId as string));
    const answer = await simulatePostback(rt, app, sim);
    rt.log.info(
      {
        appId: app.appId,
        dispatchId: sim.dispatchId,
        applied: answer.applied,
        flag: answer.flag,
      },
      'simulated postback',
    );
    res.status(202).json(answer);
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/sandbox/postbacks',
    summary:
      'Post back for one of the app’s dispatches with a chosen status and risk, through the postback API’s own checks',
    body: simulatePostbackBody,
    responses: {
      202: {
        description:
          'Accepted; `flag` is the dispatch’s compliance flag once the compliance worker applied the postback (`applied`), else the flag before it',
        schema: z.object({
          postback: postbackReceipt.extend({
            status: z.enum(POSTBACK_STATUSES),
            risk: z.enum(POSTBACK_RISKS),
            remark: z.string().nullable(),
          }),
          applied: z.boolean(),
          flag: z.string().nullable(),
        }),
      },
      ...errors,
      404: { description: 'Unknown app, or no such dispatch of this app' },
      409: {
        description: 'The app is live, or the dispatch’s event needs no postback',
      },
      422: { description: 'Invalid body (a failed status needs a remark)' },
      429: { description: 'Rate limited, or the dispatch had all its postbacks' },
    },
  });
}
