import { Router } from 'express';
import { z } from 'zod';
import { getApp } from '../../shared/domain/apps.js';
import { patterns } from '../../shared/domain/ids.js';
import { AppError } from '../../shared/errors.js';
import { requireAdmin } from '../../shared/http/auth.js';
import { parseBody } from '../../shared/http/validate.js';
import { recoverFailed, requeueDispatch } from '../../shared/ledger/requeue.js';
import type { ServiceModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';

const PREFIX = '/api/v1/admin';

export const recoverBody = z.object({
  since: z.iso
    .datetime({ offset: true })
    .describe('Re-queue failed dispatches of events created at or after this time'),
});
export const resendResponse = z.object({
  dispatchId: z.string(),
  queuedAt: z.string(),
  deliveryStatus: z.enum(['pending', 'delivered', 'failed']),
});
export const recoverResponse = z.object({ requeued: z.number().int() });

async function appOr404(rt: Runtime, appId: string) {
  if (!patterns.appId.test(appId) || !(await getApp(rt, appId)))
    throw new AppError('SVC_NOT_FOUND', 'Unknown app');
}

/**
 * Operator replay (behind the admin token). Both calls only put due entries in the
 * dispatcher's due-index, so they are durable at once and the attempts are made by whichever
 * dispatcher copy sweeps them: same dispatch id, same webhook-id, a new attempt number.
 */
export const dispatchAdminService: ServiceModule = {
  name: 'dispatch-admin',
  mount(app, rt) {
    const r = Router();
    const admin = requireAdmin(rt);

    r.post('/apps/:appId/dispatches/:dispatchId/resend', admin, async (req, res) => {
      const appId = String(req.params.appId);
      const dispatchId = String(req.params.dispatchId);
      await appOr404(rt, appId);
      const found = patterns.dispatchId.test(dispatchId)
        ? await rt.ledger.getDispatchState(dispatchId)
        : undefined;
      if (!found || found.appId !== appId) throw new AppError('SVC_NOT_FOUND', 'Unknown dispatch');
      const queued = await requeueDispatch(rt, dispatchId);
      if (!queued) throw new AppError('SVC_NOT_FOUND', 'Unknown dispatch');
      res.status(202).json({
        dispatchId,
        queuedAt: queued.nextAttemptAt,
        deliveryStatus: queued.deliveryStatus,
      });
    });

    r.post('/apps/:appId/dispatches/recover', admin, async (req, res) => {
      const appId = String(req.params.appId);
      const { since } = parseBody(recoverBody, req.body);
      await appOr404(rt, appId);
      const requeued = await recoverFailed(rt, appId, new Date(since).toISOString());
      rt.log.info({ appId, since, requeued }, 'failed dispatches re-queued');
      res.status(202).json({ requeued });
    });

    app.use(PREFIX, r);

    const errors = {
      401: { description: 'Missing or wrong admin token' },
      404: { description: 'Unknown app or dispatch' },
    };
    rt.docs.add({
      method: 'post',
      path: `${PREFIX}/apps/{appId}/dispatches/{dispatchId}/resend`,
      summary: 'Resend one dispatch now: a new attempt with the same dispatch id and webhook-id',
      tag: 'admin',
      security: ['admin'],
      responses: { 202: { description: 'Queued', schema: resendResponse }, ...errors },
    });
    rt.docs.add({
      method: 'post',
      path: `${PREFIX}/apps/{appId}/dispatches/recover`,
      summary: 'Re-queue every failed dispatch of the app whose event was created since a time',
      tag: 'admin',
      security: ['admin'],
      body: recoverBody,
      responses: {
        202: { description: 'Queued', schema: recoverResponse },
        422: { description: 'Invalid body' },
        ...errors,
      },
    });
  },
};
