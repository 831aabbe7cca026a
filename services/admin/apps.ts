import { z } from 'zod';
import type { Router } from 'express';
import { createApiKey, listApiKeys, revokeApiKey } from '../../shared/domain/apiKeys.js';
import { createApp, getApp, rotateSecret, updateApp } from '../../shared/domain/apps.js';
import { scheduleInactivityScan } from '../../shared/domain/consent/inactivity.js';
import type { ApiKey, App } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { requireAdmin } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';
import { ADMIN_PREFIX } from './prefix.js';
import {
  apiKeySchema,
  appSchema,
  createApiKeyBody,
  createAppBody,
  patchAppBody,
} from './schemas.js';

/** The app, or 404: every app-scoped admin route starts here. */
export async function loadApp(rt: Runtime, appId: string): Promise<App> {
  const app = await getApp(rt, appId);
  if (!app) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  return app;
}

/** What the API shows of a key: never the key, never its hash. */
const keyView = (k: ApiKey) => ({
  id: k.id,
  name: k.name,
  scopes: k.scopes,
  createdAt: k.createdAt,
  revokedAt: k.revokedAt,
});

const created = z.object({ app: appSchema, siteKey: z.string(), secretKey: z.string() });
const errors = {
  401: { description: 'Missing or wrong admin token' },
  404: { description: 'Unknown app' },
  422: { description: 'Invalid body' },
};

export function mountAppRoutes(router: Router, rt: Runtime): void {
  const admin = requireAdmin(rt);
  const write = [admin, rateLimit(rt), idempotency(rt, 'admin')];
  const doc = (d: Omit<Parameters<Runtime['docs']['add']>[0], 'tag' | 'security'>) =>
    rt.docs.add({ ...d, path: `${ADMIN_PREFIX}${d.path}`, tag: 'admin', security: ['admin'] });

  router.post('/apps', ...write, async (req, res) => {
    const body = parseBody(createAppBody, req.body);
    const { app, secretKey } = await createApp(rt, body);
    rt.log.info({ appId: app.appId, environment: app.environment }, 'app created');
    res
      .status(201)
      .location(`${ADMIN_PREFIX}/apps/${app.appId}`)
      .json({ app, siteKey: app.siteKey, secretKey });
  });
  doc({
    method: 'post',
    path: '/apps',
    summary:
      'Register an application (the secret key is shown only in this response; an Idempotency-Key replay shows it masked)',
    body: createAppBody,
    responses: {
      201: { description: 'Created', schema: created },
      401: errors[401],
      422: errors[422],
    },
  });

  router.get('/apps/:appId', admin, async (req, res) => {
    res.json(await loadApp(rt, req.params.appId as string));
  });
  doc({
    method: 'get',
    path: '/apps/{appId}',
    summary: 'Read an application',
    responses: {
      200: { description: 'The app', schema: appSchema },
      401: errors[401],
      404: errors[404],
    },
  });

  router.patch('/apps/:appId', ...write, async (req, res) => {
    const appId = req.params.appId as string;
    const body = parseBody(patchAppBody, req.body);
    const app = await updateApp(rt, appId, body);
    // Principals from before the policy (or its change) get their timers from a scan.
    if (typeof body.inactivityErasureDays === 'number') await scheduleInactivityScan(rt, appId);
    rt.log.info({ appId }, 'app updated');
    res.json(app);
  });
  doc({
    method: 'patch',
    path: '/apps/{appId}',
    summary: 'Change an application’s settings (not its environment)',
    body: patchAppBody,
    responses: { 200: { description: 'The app', schema: appSchema }, ...errors },
  });

  router.post('/apps/:appId/secret/rotate', ...write, async (req, res) => {
    const appId = req.params.appId as string;
    const { secretKey, app } = await rotateSecret(rt, appId);
    rt.log.info({ appId, secretVersion: app.secretVersion }, 'secret key rotated');
    res.json({ secretKey });
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/secret/rotate',
    summary: 'Replace the secret key; the old one stops working at once',
    responses: {
      200: {
        description: 'The new key (shown once; an Idempotency-Key replay shows it masked)',
        schema: z.object({ secretKey: z.string() }),
      },
      401: errors[401],
      404: errors[404],
    },
  });

  router.post('/apps/:appId/api-keys', ...write, async (req, res) => {
    const appId = req.params.appId as string;
    const body = parseBody(createApiKeyBody, req.body);
    await loadApp(rt, appId);
    const { apiKey, key } = await createApiKey(rt, appId, body);
    rt.log.info({ appId, apiKeyId: apiKey.id, scopes: apiKey.scopes }, 'API key created');
    res.status(201).json({ ...keyView(apiKey), key });
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/api-keys',
    summary:
      'Create a named, scoped API key (the key is shown only in this response; an Idempotency-Key replay shows it masked)',
    body: createApiKeyBody,
    responses: {
      201: {
        description: 'Created',
        schema: apiKeySchema.extend({ key: z.string() }),
      },
      ...errors,
    },
  });

  router.get('/apps/:appId/api-keys', admin, async (req, res) => {
    const appId = req.params.appId as string;
    await loadApp(rt, appId);
    res.json({ items: (await listApiKeys(rt, appId)).map(keyView) });
  });
  doc({
    method: 'get',
    path: '/apps/{appId}/api-keys',
    summary: 'List an application’s API keys (never the keys themselves)',
    responses: {
      200: { description: 'The keys', schema: z.object({ items: z.array(apiKeySchema) }) },
      401: errors[401],
      404: errors[404],
    },
  });

  router.delete('/apps/:appId/api-keys/:id', ...write, async (req, res) => {
    const appId = req.params.appId as string;
    await loadApp(rt, appId);
    const key = await revokeApiKey(rt, appId, req.params.id as string);
    if (!key) throw new AppError('SVC_NOT_FOUND', 'Unknown API key');
    rt.log.info({ appId, apiKeyId: key.id }, 'API key revoked');
    res.json(keyView(key));
  });
  doc({
    method: 'delete',
    path: '/apps/{appId}/api-keys/{id}',
    summary: 'Revoke an API key (repeating is harmless)',
    responses: {
      200: { description: 'The revoked key', schema: apiKeySchema },
      401: errors[401],
      404: { description: 'Unknown app or key' },
    },
  });
}
