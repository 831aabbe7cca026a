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
import { AppError } from '../../shared/errors.js';
import { corsPreflight, requireSecretOrBrowser } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { appOf, locals } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { ServiceModule } from '../../shared/process.js';
import type { Runtime } from '../../shared/runtime.js';
import {
  bulkBody,
  bulkResponse,
  listQuery,
  listResponse,
  operationBody,
  principalQuery,
} from './schemas.js';

/**
 * The public consent-management API (DESIGN §4.B): a server with `x-secret-key`, or a browser
 * with `X-Site-Key` from an allowlisted origin (the hosted or embedded portal).
 */

export const PUBLIC_PREFIX = '/api/public/consents';

/** A portal (browser) change is the principal acting; a secret-key change is the app acting. */
function writeContext(rt: Runtime, res: Response): WriteContext {
  const app = appOf(res);
  const browser = locals(res).via === 'siteKey';
  return {
    rt,
    app,
    actor: browser
      ? { source: 'portal', credential: 'siteKey' }
      : { source: 'api', credential: 'secretKey' },
  };
}

const param = (v: unknown) => (typeof v === 'string' ? v : '');

const common = {
  401: { description: 'Missing or wrong credentials' },
  403: { description: 'Browser call from an origin not on the allowlist' },
  429: { description: 'Rate limited' },
};

const verb = { grant: 'Grant', revoke: 'Revoke', erase: 'Erase' } as const;

export const publicApiService: ServiceModule = {
  name: 'public-api',
  mount(app, rt) {
    const r = Router();
    const auth = requireSecretOrBrowser(rt);
    const read = [auth, rateLimit(rt)];
    const write = [auth, rateLimit(rt), idempotency(rt)];
    const doc = (d: Omit<RouteDoc, 'tag' | 'security'>) =>
      rt.docs.add({
        ...d,
        path: `${PUBLIC_PREFIX}${d.path}`,
        tag: 'Public consent management',
        security: ['secretKey', 'siteKey'],
      });

    r.options(['/', '/*rest'], corsPreflight(rt));

    r.get('/my-transactions', ...read, async (req, res) => {
      const q = parseBody(listQuery, req.query, 'query');
      res.json(await listTransactions(rt, appOf(res).appId, q.referenceId, q));
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
        res.json({ results: await bulkOperate(writeContext(rt, res), op, body) });
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
          body.referenceId,
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
          body.referenceId,
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

    r.get('/my-transactions/:transactionId', ...read, async (req, res) => {
      const q = parseBody(principalQuery, req.query, 'query');
      const view = await getTransaction(rt, appOf(res).appId, param(req.params.transactionId));
      if (!view || (q.referenceId !== undefined && view.referenceId !== q.referenceId))
        throw new AppError('SVC_NOT_FOUND', 'Unknown transaction');
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
