import { Router, type Response } from 'express';
import {
  PUBLIC_OPERATIONS,
  bulkOperate,
  getTransaction,
  listTransactions,
  operateOnRecord,
  operateOnTransaction,
  transactionSchema,
  type WriteContext,
} from '../../shared/domain/consent/index.js';
import { noteActivity } from '../../shared/domain/consent/activity.js';
import { AppError } from '../../shared/errors.js';
import { corsPreflight, requireSecretKey, requireSecretOrBrowser } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { appOf, abandonedBy, locals } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import { mintPrincipalToken } from '../../shared/principal/index.js';
import { receiptDisposition, receiptIssuer } from '../../shared/receipts/issue.js';
import { receiptSchema } from '../../shared/receipts/schema.js';
import type { ServiceModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';
import { mountPrincipalGrievances } from './grievances.js';
import {
  bulkBody,
  bulkResponse,
  listQuery,
  listResponse,
  mintBody,
  mintResponse,
  operationBody,
  principalQuery,
} from './schemas.js';

/**
 * The public consent-management API (docs/api.md, Public consent API): a server with
 * `x-secret-key`, or a browser with `X-Site-Key` from an allowlisted origin and a principal token
 * naming the one principal it acts for (the embedded dashboard, an app's own portal page).
 */

export const PUBLIC_PREFIX = '/api/public/consents';

/** A browser change is the principal acting (its token); a secret-key change is the app acting. */
function writeContext(rt: Runtime, res: Response): WriteContext {
  const app = appOf(res);
  const browser = locals(res).via === 'siteKey';
  return {
    rt,
    app,
    actor: browser
      ? { source: 'portal', credential: 'principalToken' }
      : { source: 'api', credential: 'secretKey' },
    signal: abandonedBy(res),
  };
}

/**
 * The principal a call may touch. A browser's token names it: a call naming another is 403,
 * one naming none is confined to the token's. A server (secret key) may name any of its app's
 * principals, or none on single-item calls.
 */
function principalFor(res: Response, named: string | undefined): string | undefined {
  const p = locals(res).principal;
  if (locals(res).via !== 'siteKey') return named;
  if (!p) throw new AppError('SVC_UNAUTHORIZED', 'No principal token');
  if (named !== undefined && named !== p.referenceId)
    throw new AppError('SVC_FORBIDDEN', 'The principal token is for another referenceId');
  return p.referenceId;
}

/** A bulk call names its principal; principalFor only narrows that, never drops it. */
const principalOf = (res: Response, named: string) => principalFor(res, named) ?? named;

const param = (v: unknown) => (typeof v === 'string' ? v : '');

const common = {
  401: {
    description: 'Missing or wrong credentials; a browser call without a valid principal token',
  },
  403: {
    description:
      'Browser call from an origin not on the allowlist, or naming another referenceId than its token',
  },
  429: { description: 'Rate limited' },
};

/** Longest and default lifetime of a token minted by the app's server. */
const MINT_DEFAULT_TTL_S = 3_600;

const verb = { grant: 'Grant', revoke: 'Revoke', erase: 'Erase' } as const;

export const publicApiService: ServiceModule = {
  name: 'public-api',
  mount(app, rt) {
    const r = Router();
    const auth = requireSecretOrBrowser(rt);
    const read = [auth, rateLimit(rt)];
    const write = [auth, rateLimit(rt), idempotency(rt, 'public')];
    const doc = (d: Omit<RouteDoc, 'tag' | 'security'>) =>
      rt.docs.add({
        ...d,
        path: `${PUBLIC_PREFIX}${d.path}`,
        tag: 'Public consent management',
        security: ['secretKey', 'siteKey'],
      });

    r.options(['/', '/*rest'], corsPreflight(rt));

    // Server only: a browser can neither mint nor extend a token (x-secret-key is never CORS).
    // No Idempotency-Key handling: a repeat changes nothing, and tokens are not kept at rest.
    r.post('/principal-tokens', requireSecretKey(rt), rateLimit(rt), async (req, res) => {
      const body = parseBody(mintBody, req.body);
      const ttlMs = (body.ttlSeconds ?? MINT_DEFAULT_TTL_S) * 1000;
      const t = await mintPrincipalToken(rt, appOf(res), body.referenceId, ttlMs);
      res
        .status(201)
        .set('Cache-Control', 'no-store')
        .json({ token: t.token, expiresAt: t.expiresAt.toISOString() });
    });
    rt.docs.add({
      method: 'post',
      path: `${PUBLIC_PREFIX}/principal-tokens`,
      summary:
        'Mint a principal token (svc_pt_…) for one of the app’s principals, for its browser (dashboard, own portal page)',
      tag: 'Public consent management',
      security: ['secretKey'],
      body: mintBody,
      responses: {
        201: { description: 'The token and when it expires', schema: mintResponse },
        401: { description: 'Missing or wrong secret key' },
        404: { description: 'Unknown referenceId' },
        422: { description: 'Invalid body (ttlSeconds above 86400)' },
        429: { description: 'Rate limited' },
      },
    });

    r.get('/my-transactions', ...read, async (req, res) => {
      const q = parseBody(listQuery, req.query, 'query');
      const ref = principalOf(res, q.referenceId);
      const page = await listTransactions(rt, appOf(res).appId, ref, q);
      if (page.items.length > 0) noteActivity(rt, appOf(res), ref);
      res.json(page);
    });
    doc({
      method: 'get',
      path: '/my-transactions',
      summary: 'List a principal’s transactions, newest first',
      query: listQuery,
      responses: {
        200: { description: 'One page', schema: listResponse },
        ...common,
        422: { description: 'Invalid query or cursor' },
      },
    });

    // Bulk and record routes first: "bulk" and "records" would otherwise match :transactionId.
    for (const op of PUBLIC_OPERATIONS) {
      r.post(`/my-transactions/bulk/${op}`, ...write, async (req, res) => {
        const body = parseBody(bulkBody, req.body);
        const targets = { ...body, referenceId: principalOf(res, body.referenceId) };
        res.json({ results: await bulkOperate(writeContext(rt, res), op, targets) });
      });
      doc({
        method: 'post',
        path: `/my-transactions/bulk/${op}`,
        summary: `${verb[op]} many transactions and/or records of one principal (each applied on its own)`,
        body: bulkBody,
        responses: {
          200: { description: 'One result per id', schema: bulkResponse },
          ...common,
          422: { description: 'Invalid body (more than 100 ids, bad referenceId)' },
        },
      });

      r.post(`/my-transactions/records/:recordId/${op}`, ...write, async (req, res) => {
        const body = parseBody(operationBody, req.body ?? {});
        const view = await operateOnRecord(
          writeContext(rt, res),
          param(req.params.recordId),
          op,
          principalFor(res, body.referenceId),
        );
        res.json(view);
      });
      doc({
        method: 'post',
        path: `/my-transactions/records/{recordId}/${op}`,
        summary: `${verb[op]} one record; answers its transaction`,
        body: operationBody,
        responses: {
          200: { description: 'The transaction', schema: transactionSchema },
          ...common,
          404: { description: 'Unknown record' },
          409: { description: 'Not allowed in the record’s state (e.g. grant after erase)' },
        },
      });

      r.post(`/my-transactions/:transactionId/${op}`, ...write, async (req, res) => {
        const body = parseBody(operationBody, req.body ?? {});
        const view = await operateOnTransaction(
          writeContext(rt, res),
          param(req.params.transactionId),
          op,
          principalFor(res, body.referenceId),
        );
        res.json(view);
      });
      doc({
        method: 'post',
        path: `/my-transactions/{transactionId}/${op}`,
        summary: `${verb[op]} every record of a transaction (all or nothing)`,
        body: operationBody,
        responses: {
          200: { description: 'The transaction', schema: transactionSchema },
          ...common,
          404: { description: 'Unknown transaction' },
          409: { description: 'Not allowed in a record’s state (e.g. grant after erase)' },
        },
      });
    }

    // The same rule as reading the transaction: a browser only for its token's principal.
    const issueReceipt = receiptIssuer(rt);
    r.get('/my-transactions/:transactionId/receipt', ...read, async (req, res) => {
      const q = parseBody(principalQuery, req.query, 'query');
      const id = param(req.params.transactionId);
      const receipt = await issueReceipt(appOf(res), id, principalFor(res, q.referenceId));
      if (!receipt) throw new AppError('SVC_NOT_FOUND', 'Unknown transaction');
      res.set({ 'Cache-Control': 'no-store', 'Content-Disposition': receiptDisposition(id) });
      res.json(receipt);
    });
    doc({
      method: 'get',
      path: '/my-transactions/{transactionId}/receipt',
      summary:
        'A signed consent receipt of one transaction (Ed25519, verifiable offline with /.well-known/svc-keys.json)',
      query: principalQuery,
      responses: {
        200: { description: 'The receipt', schema: receiptSchema },
        ...common,
        404: { description: 'Unknown transaction' },
      },
    });

    mountPrincipalGrievances(r, rt, { read, write, principalFor, doc, common });

    r.get('/my-transactions/:transactionId', ...read, async (req, res) => {
      const q = parseBody(principalQuery, req.query, 'query');
      const ref = principalFor(res, q.referenceId);
      const view = await getTransaction(rt, appOf(res).appId, param(req.params.transactionId));
      if (!view || (ref !== undefined && view.referenceId !== ref))
        throw new AppError('SVC_NOT_FOUND', 'Unknown transaction');
      noteActivity(rt, appOf(res), view.referenceId);
      res.json(view);
    });
    doc({
      method: 'get',
      path: '/my-transactions/{transactionId}',
      summary: 'Read one transaction',
      query: principalQuery,
      responses: {
        200: { description: 'The transaction', schema: transactionSchema },
        ...common,
        404: { description: 'Unknown transaction' },
      },
    });

    app.use(PUBLIC_PREFIX, r);
  },
};
