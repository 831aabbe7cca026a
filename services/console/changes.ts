import type { RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import { API_KEY_SCOPES, createApiKey, revokeApiKey } from '../../shared/domain/apiKeys.js';
import { rotateSecret } from '../../shared/domain/apps.js';
import { AppError } from '../../shared/errors.js';
import { listDispatchesByApp } from '../../shared/ledger/queries.js';
import { requeueDispatch } from '../../shared/ledger/requeue.js';
import type { Runtime } from '../../shared/runtime.js';
import { appFor } from './data.js';
import { esc, sendPage } from './html.js';
import { appPath, shownOncePage } from './pages.js';
import { sessionOf } from './session.js';

/**
 * The console's changes, each a POST behind the session and its CSRF token (`write`): secret
 * rotation, API keys, and re-enabling a disabled webhook endpoint. Each goes through the same
 * domain function as its admin API route and is logged with `via: "console"`.
 */

const createKeyForm = z.object({
  name: z.string().trim().min(1).max(100),
  // A form sends one checkbox as a string, several as an array.
  scopes: z.preprocess(
    (v): unknown[] => (v === undefined ? [] : Array.isArray(v) ? (v as unknown[]) : [v]),
    z.array(z.enum(API_KEY_SCOPES)).min(1, 'choose at least one scope'),
  ),
});

/** A form's fields by a schema; 422 naming each invalid field. */
export function parseForm<T>(schema: z.ZodType<T>, body: unknown): T {
  const r = schema.safeParse(body ?? {});
  if (r.success) return r.data;
  throw new AppError('SVC_VALIDATION_FAILED', 'The form is not valid', {
    errors: r.error.issues.map((i) => ({
      path: `/${i.path.map(String).join('/')}`,
      message: i.message,
    })),
  });
}

const param = (v: unknown) => (typeof v === 'string' ? v : '');
const redirect = (res: Response, to: string) => res.redirect(303, to);

export function mountChanges(r: Router, rt: Runtime, write: RequestHandler[]): void {
  const appOf = (res: Response, appId: unknown) => appFor(rt, sessionOf(res), param(appId));

  r.post('/apps/:appId/secret/rotate', ...write, async (req, res) => {
    const s = sessionOf(res);
    const a = await appOf(res, req.params.appId);
    const { secretKey, app: rotated } = await rotateSecret(rt, a.appId);
    rt.log.info(
      { appId: a.appId, secretVersion: rotated.secretVersion, via: 'console' },
      'secret key rotated',
    );
    sendPage(
      res,
      200,
      shownOncePage(s, rotated, {
        title: 'New secret key',
        label: 'Secret key',
        value: secretKey,
        extra:
          '<p>The old secret key has stopped working, and webhooks are now signed with this one.</p>',
      }),
    );
  });

  r.post('/apps/:appId/api-keys', ...write, async (req, res) => {
    const s = sessionOf(res);
    const a = await appOf(res, req.params.appId);
    const body = parseForm(createKeyForm, req.body);
    const { apiKey, key } = await createApiKey(rt, a.appId, body);
    rt.log.info(
      { appId: a.appId, apiKeyId: apiKey.id, scopes: apiKey.scopes, via: 'console' },
      'API key created',
    );
    sendPage(
      res,
      201,
      shownOncePage(s, a, {
        title: 'New API key',
        label: `API key “${apiKey.name}”`,
        value: key,
        extra: `<p>Scopes: ${apiKey.scopes.map((x) => `<code>${esc(x)}</code>`).join(' ')}.</p>`,
      }),
    );
  });

  r.post('/apps/:appId/api-keys/:id/revoke', ...write, async (req, res) => {
    const a = await appOf(res, req.params.appId);
    const key = await revokeApiKey(rt, a.appId, param(req.params.id));
    if (!key) throw new AppError('SVC_NOT_FOUND', 'Unknown API key');
    rt.log.info({ appId: a.appId, apiKeyId: key.id, via: 'console' }, 'API key revoked');
    redirect(res, `${appPath(a.appId)}?done=revoked`);
  });

  // The dispatcher enables a disabled endpoint again when a delivery to it succeeds; an
  // operator's resend is attempted even while it is disabled (docs/webhooks.md, Replay).
  r.post('/apps/:appId/endpoint/re-enable', ...write, async (req, res) => {
    const a = await appOf(res, req.params.appId);
    const newest = (await listDispatchesByApp(rt, a.appId, { order: 'desc', limit: 1 })).items[0];
    if (!newest) return redirect(res, `${appPath(a.appId)}?done=nothing-to-resend`);
    await requeueDispatch(rt, newest.dispatchId);
    rt.log.info({ appId: a.appId, dispatchId: newest.dispatchId, via: 'console' }, 'resend queued');
    redirect(res, `${appPath(a.appId)}?done=re-enable`);
  });
}
