import { z } from 'zod';
import type { Router } from 'express';
import { createApp, recordGoLive } from '../../shared/domain/apps.js';
import {
  attestability,
  CHECKLIST_AREAS,
  evaluateChecklist,
  failingCritical,
  ITEM_STATUSES,
  SEVERITIES,
  type Checklist,
} from '../../shared/domain/checklist.js';
import {
  claimGoLive,
  completeGoLive,
  loadChecklistSnapshot,
  recordAttestation,
  releaseGoLive,
} from '../../shared/domain/checklist-store.js';
import { createNotice, listNotices } from '../../shared/domain/notices.js';
import type { App } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
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
 * go-live). The rules are shared/domain/checklist.ts; this file loads, answers and writes.
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

const person = z.string().trim().min(1).max(200);
export const attestBody = z.strictObject({ by: person, note: z.string().trim().min(1).max(2000) });

export const goLiveBody = z.strictObject({
  /** The live app's webhook URL, which must be https. */
  webhookUrl: createAppBody.shape.webhookUrl.refine(
    (u) => u.startsWith('https://'),
    'must be an https URL for a live app',
  ),
  /** The live app's allowlist; the sandbox app's when absent. */
  allowedOrigins: createAppBody.shape.allowedOrigins.optional(),
  /** Who takes the app live (kept on both apps); "admin" when absent. */
  by: person.optional(),
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

async function checklistOf(rt: Runtime, app: App): Promise<Checklist> {
  return evaluateChecklist(await loadChecklistSnapshot(rt, app), Date.now());
}

/** The refusal of a go-live: each failing critical item, by id, with why. */
function incomplete(c: Checklist): AppError {
  const failing = failingCritical(c);
  return new AppError(
    'SVC_CHECKLIST_INCOMPLETE',
    `${failing.length} critical checklist item(s) are not satisfied: ${failing.map((i) => i.id).join(', ')}`,
    {
      errors: failing.map((i) => ({
        path: `/checklist/${i.id}`,
        message: `${i.status}: ${i.title}. ${i.evidence}`,
      })),
    },
  );
}

/**
 * Creates the live twin: its own app id, site key and `svc_sk_` secret, no API keys, no time
 * compression, the sandbox app's notices (their latest versions) copied.
 */
async function createLiveTwin(
  rt: Runtime,
  sandbox: App,
  body: z.infer<typeof goLiveBody>,
): Promise<{ app: App; secretKey: string; noticesCopied: number }> {
  const { app, secretKey } = await createApp(rt, {
    name: sandbox.name,
    environment: 'live',
    webhookUrl: body.webhookUrl,
    allowedOrigins: body.allowedOrigins ?? sandbox.allowedOrigins,
    contactEmail: sandbox.contactEmail,
    portalUrlTemplate: sandbox.portalUrlTemplate,
  });
  const notices = await listNotices(rt, sandbox.appId);
  for (const n of notices) {
    const {
      appId: _appId,
      noticeId: _noticeId,
      version: _version,
      textHash: _textHash,
      createdAt: _createdAt,
      ...input
    } = n;
    await createNotice(rt, app.appId, input);
  }
  return { app, secretKey, noticesCopied: notices.length };
}

export function mountChecklistRoutes(router: Router, rt: Runtime): void {
  const admin = requireAdmin(rt);
  const write = [admin, rateLimit(rt), idempotency(rt)];
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
    const kind = attestability(itemId);
    if (kind === 'unknown') throw new AppError('SVC_NOT_FOUND', 'Unknown checklist item');
    if (kind === 'observed')
      throw new AppError(
        'SVC_CONFLICT',
        `The item ${itemId} is decided from what the service observes; it cannot be attested`,
      );
    const attestation = await recordAttestation(rt, appId, itemId, body);
    rt.log.info({ appId, itemId }, 'checklist item attested');
    const item = (await checklistOf(rt, app)).areas
      .flatMap((a) => a.items)
      .find((i) => i.id === itemId);
    res.status(201).json({ attestation, item });
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
    if (sandbox.environment !== 'sandbox')
      throw new AppError('SVC_CONFLICT', 'Only a sandbox app goes live; this app is live');
    if (sandbox.goLiveAt)
      throw new AppError('SVC_CONFLICT', `This app went live at ${sandbox.goLiveAt}`);
    const checklist = await checklistOf(rt, sandbox);
    if (!checklist.canGoLive) throw incomplete(checklist);
    const at = new Date().toISOString();
    const by = body.by ?? 'admin';
    if (!(await claimGoLive(rt, appId, { by, at })))
      throw new AppError('SVC_CONFLICT', 'This app went live already (or is going live now)');
    const twin = await createLiveTwin(rt, sandbox, body).catch(async (err: unknown) => {
      await releaseGoLive(rt, appId).catch((e: unknown) =>
        rt.log.error({ err: e, appId }, 'go-live claim not released'),
      );
      throw err;
    });
    const liveAppId = twin.app.appId;
    await completeGoLive(rt, appId, { by, at, liveAppId });
    const live = await recordGoLive(rt, liveAppId, { at, by, twin: { sandboxAppId: appId } });
    await recordGoLive(rt, appId, { at, by, twin: { liveAppId } });
    rt.log.info({ appId, liveAppId, noticesCopied: twin.noticesCopied }, 'app went live');
    res.status(201).location(`${ADMIN_PREFIX}/apps/${liveAppId}`).json({
      app: live,
      siteKey: live.siteKey,
      secretKey: twin.secretKey,
      sandboxAppId: appId,
      noticesCopied: twin.noticesCopied,
    });
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
