import { Router, type Response } from 'express';
import { z } from 'zod';
import {
  PUBLIC_OPERATIONS,
  getTransaction,
  listTransactions,
  operateOnRecord,
  operateOnTransaction,
  transactionSchema,
  type WriteContext,
} from '../../shared/domain/consent/index.js';
import { noteActivity } from '../../shared/domain/consent/activity.js';
import { AppError } from '../../shared/errors.js';
import { loadPageAssets } from '../../shared/http/page-assets.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { appOf, abandonedBy, locals } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import { PORTAL_PATH } from '../../shared/portal/index.js';
import { receiptDisposition, receiptIssuer } from '../../shared/receipts/issue.js';
import { receiptSchema } from '../../shared/receipts/schema.js';
import type { ServiceModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';
import { principalOf, requirePortalToken } from './auth.js';
import { mountPortalGrievances } from './grievances.js';
import { pageLanguage, portalPage, queryTokenPage, sendPage } from './page.js';

/**
 * The hosted portal (docs/api.md, Hosted portal): `GET /portal/{referenceId}#token=…` is the page;
 * its script reads the principal token from the fragment and calls `/portal/api/{referenceId}/…`
 * with it in `Authorization: Portal …`. Changes go through the same consent domain as the public
 * API, with source "portal" (the principal acting).
 */

const listQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(2048).optional(),
});
const listResponse = z.object({
  items: z.array(transactionSchema),
  nextCursor: z.string().nullable(),
});
const sessionResponse = z.object({
  referenceId: z.string(),
  expiresAt: z.string(),
  app: z.object({ name: z.string(), contactEmail: z.string() }),
});

const ASSET_TYPES = {
  'portal.js': 'text/javascript',
  'portal.css': 'text/css',
  'favicon.svg': 'image/svg+xml',
} as const;
type AssetName = keyof typeof ASSET_TYPES;

function writeContext(rt: Runtime, res: Response): WriteContext {
  return {
    rt,
    app: appOf(res),
    actor: { source: 'portal', credential: 'principalToken' },
    signal: abandonedBy(res),
  };
}

const param = (v: unknown) => (typeof v === 'string' ? v : '');

const common = {
  401: { description: 'Missing, expired or ended portal token (secret rotated, principal erased)' },
  403: { description: 'Forged token, or a token for another referenceId' },
  422: { description: 'A token in the query string (never accepted)' },
  429: { description: 'Rate limited' },
};

export const portalService: ServiceModule = {
  name: 'portal',
  async mount(app, rt) {
    const assets = await loadPageAssets(new URL('./', import.meta.url), 'portal');
    const r = Router();
    const auth = requirePortalToken(rt);
    const read = [auth, rateLimit(rt)];
    const write = [auth, rateLimit(rt), idempotency(rt, 'portal')];
    const doc = (d: Omit<RouteDoc, 'tag'>) =>
      rt.docs.add({ ...d, path: `${PORTAL_PATH}${d.path}`, tag: 'Hosted portal' });

    r.get('/assets/:name', (req, res, next) => {
      const name = req.params.name as AssetName;
      if (!Object.hasOwn(ASSET_TYPES, name)) return next();
      res
        .type(ASSET_TYPES[name])
        .set({ 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' })
        .send(assets[name]);
    });

    // The page holds no data: everything comes from the API, with the token from the fragment.
    // In the language of `?lang=` (the e-mails' links carry it), else of the browser.
    r.get('/:referenceId', (req, res) => {
      const lang = pageLanguage(req.query.lang, req.get('accept-language'));
      res.set('Vary', 'Accept-Language');
      if (req.query.token !== undefined) return sendPage(res, 400, queryTokenPage(lang));
      sendPage(res, 200, portalPage(param(req.params.referenceId), lang));
    });

    r.get('/api/:referenceId/session', ...read, (_req, res) => {
      const a = appOf(res);
      // Opening the portal (e.g. from an inactivity warning) is the principal's activity.
      noteActivity(rt, a, principalOf(res));
      res.set('Cache-Control', 'no-store').json({
        referenceId: principalOf(res),
        expiresAt: locals(res).principal!.expiresAt.toISOString(),
        app: { name: a.name, contactEmail: a.contactEmail },
      });
    });
    doc({
      method: 'get',
      path: '/api/{referenceId}/session',
      summary: 'Whose link this is: the app’s name and contact, and when the link expires',
      responses: { 200: { description: 'The session', schema: sessionResponse }, ...common },
    });

    r.get('/api/:referenceId/transactions', ...read, async (req, res) => {
      const q = parseBody(listQuery, req.query, 'query');
      res.set('Cache-Control', 'no-store');
      res.json(await listTransactions(rt, appOf(res).appId, principalOf(res), q));
    });
    doc({
      method: 'get',
      path: '/api/{referenceId}/transactions',
      summary: 'The principal’s transactions, newest first (Authorization: Portal <token>)',
      query: listQuery,
      responses: { 200: { description: 'One page', schema: listResponse }, ...common },
    });

    r.get('/api/:referenceId/transactions/:transactionId', ...read, async (req, res) => {
      const view = await getTransaction(rt, appOf(res).appId, param(req.params.transactionId));
      if (!view || view.referenceId !== principalOf(res))
        throw new AppError('SVC_NOT_FOUND', 'Unknown transaction');
      res.set('Cache-Control', 'no-store').json(view);
    });
    doc({
      method: 'get',
      path: '/api/{referenceId}/transactions/{transactionId}',
      summary: 'One transaction of the principal',
      responses: {
        200: { description: 'The transaction', schema: transactionSchema },
        ...common,
        404: { description: 'Unknown transaction' },
      },
    });

    const issueReceipt = receiptIssuer(rt);
    r.get('/api/:referenceId/transactions/:transactionId/receipt', ...read, async (req, res) => {
      const id = param(req.params.transactionId);
      const receipt = await issueReceipt(appOf(res), id, principalOf(res));
      if (!receipt) throw new AppError('SVC_NOT_FOUND', 'Unknown transaction');
      res.set({ 'Cache-Control': 'no-store', 'Content-Disposition': receiptDisposition(id) });
      res.json(receipt);
    });
    doc({
      method: 'get',
      path: '/api/{referenceId}/transactions/{transactionId}/receipt',
      summary: 'A signed consent receipt of one transaction of the principal (docs/receipts.md)',
      responses: {
        200: { description: 'The receipt', schema: receiptSchema },
        ...common,
        404: { description: 'Unknown transaction' },
      },
    });

    for (const op of PUBLIC_OPERATIONS) {
      r.post(`/api/:referenceId/transactions/:transactionId/${op}`, ...write, async (req, res) => {
        const id = param(req.params.transactionId);
        res.json(await operateOnTransaction(writeContext(rt, res), id, op, principalOf(res)));
      });
      r.post(`/api/:referenceId/records/:recordId/${op}`, ...write, async (req, res) => {
        const id = param(req.params.recordId);
        res.json(await operateOnRecord(writeContext(rt, res), id, op, principalOf(res)));
      });
      for (const [what, path] of [
        ['every record of a transaction', `/api/{referenceId}/transactions/{transactionId}/${op}`],
        ['one record', `/api/{referenceId}/records/{recordId}/${op}`],
      ] as const)
        doc({
          method: 'post',
          path,
          summary: `${op[0]!.toUpperCase()}${op.slice(1)} ${what} of the principal (source "portal")`,
          responses: {
            200: { description: 'The transaction', schema: transactionSchema },
            ...common,
            404: { description: 'Not one of the principal’s' },
            409: { description: 'Not allowed in the record’s state (e.g. grant after erase)' },
          },
        });
    }

    mountPortalGrievances(r, rt, { read, write, doc, common });

    app.use(PORTAL_PATH, r);
  },
};
