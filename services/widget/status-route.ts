import type { Router } from 'express';
import { z } from 'zod';
import { decisionStatus, openStatusToken } from '../../shared/domain/consent/decision-status.js';
import { AppError } from '../../shared/errors.js';
import { requireSiteKey } from '../../shared/http/auth.js';
import { appOf } from '../../shared/http/locals.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * `GET /api/v1/widget/status/{token}` (docs/widget-status.md): whether the decision a widget
 * capture made still stands, asked with the capture's status token and the app's site key: one
 * read of its transaction, nothing about the principal.
 */

export const statusResponse = z.union([
  z.object({ live: z.literal(true) }),
  z.object({
    live: z.literal(false),
    /** Withdrawn (any purpose revoked), erased, or past its validity window. */
    reason: z.enum(['withdrawn', 'erased', 'expired']),
  }),
]);

/**
 * Every status answer is revalidated (never served from a cache unasked), so a change reaches
 * the widget at the next check; the ETag keeps an unchanged answer to a 304.
 */
export const STATUS_CACHE_CONTROL = 'private, no-cache';

export function mountDecisionStatus(r: Router, rt: Runtime): void {
  r.get('/status/:token', requireSiteKey(rt), rateLimit(rt), async (req, res) => {
    const a = appOf(res);
    const id = openStatusToken(rt.config, a.appId, String(req.params.token));
    const status = id && (await decisionStatus(rt.consents, a.appId, id, Date.now()));
    if (!status) throw new AppError('SVC_NOT_FOUND', 'No decision for this status token');
    const etag = `"${status.live ? 'live' : status.reason}"`;
    res.vary('X-Site-Key').set({ 'Cache-Control': STATUS_CACHE_CONTROL, ETag: etag });
    const seen = (req.get('if-none-match') ?? '').split(',').map((t) => t.trim());
    if (seen.some((t) => t === '*' || t.replace(/^W\//, '') === etag)) {
      res.status(304).end();
      return;
    }
    res.json(status);
  });
  rt.docs.add({
    method: 'get',
    path: '/api/v1/widget/status/{token}',
    summary:
      'Whether the decision a widget capture made still stands (its status token; revalidated on every call, ETag)',
    tag: 'Widget',
    security: ['siteKey'],
    responses: {
      200: { description: 'Live, or withdrawn, erased or expired', schema: statusResponse },
      304: { description: 'Not modified: `If-None-Match` names the current ETag' },
      401: { description: 'Missing or unknown site key' },
      403: { description: 'Origin not on the allowlist' },
      404: { description: 'Not a status token of this app, or no such decision' },
      429: { description: 'Rate limited' },
    },
  });
}
