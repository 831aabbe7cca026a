import { Router, type Express } from 'express';
import {
  parentalVerificationBody,
  settleParentalVerification,
} from '../../shared/domain/consent/parental.js';
import { requireApiKey } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { appOf, locals } from '../../shared/http/locals.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';
import { parentalVerificationResponse } from './schemas.js';

/**
 * The app's report of a verifiable parental consent (docs/parental-and-inactivity.md), with the
 * record API's credential (`Authorization: Bearer svc_ak_…`, scope consents:write). Another
 * app's consent id answers like an unknown one (404).
 */

const PATH = '/api/v1/consents/transactions';

export function mountParentalRoutes(app: Express, rt: Runtime): void {
  const r = Router();
  // Rate limit before idempotency, so a 429 is never stored as the key's answer.
  const write = [requireApiKey(rt, 'consents:write'), rateLimit(rt), idempotency(rt, 'consents')];
  r.post('/:consentId/parental-verification', ...write, async (req, res) => {
    const body = parseBody(parentalVerificationBody, req.body);
    const id = typeof req.params.consentId === 'string' ? req.params.consentId : '';
    const ctx = {
      rt,
      app: appOf(res),
      actor: { source: 'api' as const, credential: locals(res).apiKey?.id ?? 'apiKey' },
    };
    const view = await settleParentalVerification(ctx, id, body);
    // A write-only key gets a receipt of what it did, never the records.
    if (locals(res).apiKey?.scopes.includes('consents:read')) return void res.json(view);
    res.json({
      transactionId: view.transactionId,
      referenceId: view.referenceId,
      parentalVerification: view.parentalVerification,
    });
  });
  app.use(PATH, r);

  rt.docs.add({
    method: 'post',
    path: `${PATH}/{consentId}/parental-verification`,
    summary:
      'Report the outcome of the verifiable parental consent of a capture: verified grants its pending purposes, failed refuses them (scope consents:write)',
    tag: 'Consent records',
    security: ['apiKey'],
    body: parentalVerificationBody,
    responses: {
      200: {
        description:
          'The transaction after it (a receipt without consents:read); repeating the recorded outcome changes nothing',
        schema: parentalVerificationResponse,
      },
      401: { description: 'Missing, wrong or revoked API key' },
      403: { description: 'The API key lacks the scope' },
      404: { description: 'Unknown consentId' },
      409: {
        description:
          'Not captured under a notice requiring parental consent, or the other outcome was already recorded',
      },
      422: {
        description: 'Invalid body (reference or remark missing, verifiedAt in the future)',
      },
      429: { description: 'Rate limited' },
    },
  });
}
