import { Router } from 'express';
import { POSTBACK_PATH } from '../../shared/domain/consent/events.js';
import { postbackBody, postbackReceipt } from '../../shared/domain/compliance/postback.js';
import { requireSecretKey } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { appOf } from '../../shared/http/locals.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { ServiceModule } from '../../shared/module.js';
import { acceptPostback } from '../../shared/compliance/accept.js';

export { COMPLETED_AT_MAX_SKEW_MS } from '../../shared/compliance/accept.js';

/**
 * The postback API (docs/api.md, Postbacks): the app confirms what it did about a webhook. The
 * service only checks and records the postback on its way (outbox → Kafka); the compliance worker
 * matches it to the dispatch and computes the flag. The checks and the write: accept.ts.
 */

export function createPostbackService(o: { now?: () => Date } = {}): ServiceModule {
  const now = o.now ?? (() => new Date());
  return {
    name: 'postback',
    mount(app, rt) {
      const r = Router();
      rt.docs.add({
        method: 'post',
        path: POSTBACK_PATH,
        summary: 'Confirm the action taken for a webhook that requires a postback',
        tag: 'Postbacks',
        security: ['secretKey'],
        body: postbackBody,
        example: {
          dispatchId: 'dsp_01KB8Z6S0XJ6Y1V5Q2E7N4M3PR',
          referenceId: 'SVC-REF-7K2M9Q4T',
          status: 'processed',
          completedAt: '2026-11-22T10:15:30.123Z',
          risk: 'none',
          tags: ['crm'],
          actions: [{ type: 'unsubscribe', result: 'done' }],
        },
        responses: {
          202: {
            description: 'Accepted; the compliance flag follows',
            schema: postbackReceipt,
            example: {
              dispatchId: 'dsp_01KB8Z6S0XJ6Y1V5Q2E7N4M3PR',
              receivedAt: '2026-11-22T10:15:30.456Z',
              postbackId: 'pb_01KB8Z6S9C3D4E5F6G7H8J9K0M',
            },
          },
          401: { description: 'Missing or wrong secret key' },
          404: { description: 'No such dispatch for this app' },
          409: { description: 'The event of this dispatch needs no postback' },
          422: { description: 'Invalid body, or referenceId does not match the dispatch' },
          429: {
            description:
              'Rate limited, or the dispatch already had POSTBACK_MAX_PER_DISPATCH (20) postbacks',
          },
        },
      });

      r.post(
        POSTBACK_PATH,
        requireSecretKey(rt),
        rateLimit(rt),
        idempotency(rt, 'postback'),
        async (req, res) => {
          const app = appOf(res);
          const body = parseBody(postbackBody, req.body);
          const receipt = await acceptPostback(rt, app, body, now());
          res.status(202).json(receipt);
        },
      );
      app.use(r);
    },
  };
}

export const postbackService: ServiceModule = createPostbackService();
