import { z } from 'zod';
import type { Router } from 'express';
import { CHECKLIST_AREAS, ITEM_STATUSES, SEVERITIES } from '../../shared/domain/checklist.js';
import { attestInput, attestItem, checklistOf, goLive } from '../../shared/apps/go-live.js';
import { requireAdmin } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';
import { loadApp } from './apps.js';
import { ADMIN_PREFIX } from './prefix.js';
import { appSchema, createAppBody } from './schemas.js';

/**
 * The compliance checklist, attestations and go-live (docs/api.md, Compliance checklist and
 * go-live). The rules are shared/domain/checklist.ts, the changes shared/apps/go-live.ts
 * (which the console calls too); this file parses, answers and documents.
 */

const itemSchema = z.object({
  id: z.string(),
  title: z.string(),
  severity: z.enum(SEVERITIES),
  status: z.enum(ITEM_STATUSES),
  evidence: z.string(),
  howToFix: z.string(),
});
const checklistSchema = z.object({
  appId: z.string(),
  environment: z.enum(['sandbox', 'live']),
  canGoLive: z.boolean(),
  areas: z.array(z.object({ area: z.enum(CHECKLIST_AREAS), items: z.array(itemSchema) })),
});

export const attestBody = attestInput;

export const goLiveBody = z.strictObject({
  /** The live app's webhook URL, which must be https. */
  webhookUrl: createAppBody.shape.webhookUrl.refine(
    (u) => u.startsWith('https://'),
    'must be an https URL for a live app',
  ),
  /** The live app's allowlist; the sandbox app's when absent. */
  allowedOrigins: createAppBody.shape.allowedOrigins.optional(),
  /** Who takes the app live (kept on both apps); "admin" when absent. */
  by: attestInput.shape.by.optional(),
});

const goLiveAnswer = z.object({
  app: appSchema,
  siteKey: z.string(),
  secretKey: z.string(),
  sandboxAppId: z.string(),
  noticesCopied: z.number(),
});

const errors = {
  401: { description: 'Missing or wrong admin token' },
  404: { description: 'Unknown app' },
};

export function mountChecklistRoutes(router: Router, rt: Runtime): void {
  const admin = requireAdmin(rt);
  const write = [admin, rateLimit(rt), idempotency(rt, 'admin')];
  const doc = (d: Omit<Parameters<Runtime['docs']['add']>[0], 'tag' | 'security'>) =>
    rt.docs.add({ ...d, path: `${ADMIN_PREFIX}${d.path}`, tag: 'admin', security: ['admin'] });

  router.get('/apps/:appId/checklist', admin, async (req, res) => {
    const app = await loadApp(rt, req.params.appId as string);
    res.json(await checklistOf(rt, app));
  });
  doc({
    method: 'get',
    path: '/apps/{appId}/checklist',
    summary:
      'The compliance checklist: seven areas of items, evaluated from what the service observed, or attested',
    responses: { 200: { description: 'The checklist', schema: checklistSchema }, ...errors },
  });

  router.post('/apps/:appId/checklist/:itemId/attest', ...write, async (req, res) => {
    const appId = req.params.appId as string;
    const itemId = req.params.itemId as string;
    const body = parseBody(attestBody, req.body);
    const app = await loadApp(rt, appId);
    const answer = await attestItem(rt, app, itemId, body);
    rt.log.info({ appId, itemId }, 'checklist item attested');
    res.status(201).json(answer);
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/checklist/{itemId}/attest',
    summary: 'Attest an item only a person can confirm (who, when and the note are kept)',
    body: attestBody,
    responses: {
      201: {
        description: 'Attested',
        schema: z.object({
          attestation: z.object({ by: z.string(), note: z.string(), at: z.string() }),
          item: itemSchema,
        }),
      },
      ...errors,
      404: { description: 'Unknown app or checklist item' },
      409: { description: 'The item is decided from what the service observes' },
      422: { description: 'Invalid body' },
    },
  });

  router.post('/apps/:appId/go-live', ...write, async (req, res) => {
    const appId = req.params.appId as string;
    const body = parseBody(goLiveBody, req.body);
    const sandbox = await loadApp(rt, appId);
    const live = await goLive(rt, sandbox, { ...body, by: body.by ?? 'admin' });
    rt.log.info(
      { appId, liveAppId: live.app.appId, noticesCopied: live.noticesCopied },
      'app went live',
    );
    res
      .status(201)
      .location(`${ADMIN_PREFIX}/apps/${live.app.appId}`)
      .json({ ...live, siteKey: live.app.siteKey });
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/go-live',
    summary:
      'Create the live twin of a sandbox app whose critical checklist items are satisfied (its secret key is shown only in this response)',
    body: goLiveBody,
    responses: {
      201: { description: 'The live app', schema: goLiveAnswer },
      ...errors,
      409: {
        description:
          'SVC_CHECKLIST_INCOMPLETE with the failing critical items, or the app is live or went live already',
      },
      422: { description: 'Invalid body (the webhook URL must be https)' },
    },
  });
}
