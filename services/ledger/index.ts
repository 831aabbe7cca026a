import { Router } from 'express';
import type { App } from '../../shared/domain/types.js';
import { patterns } from '../../shared/domain/ids.js';
import { AppError } from '../../shared/errors.js';
import { requireApiKey } from '../../shared/http/auth.js';
import { appOf } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import { toDispatch } from '../../shared/storage/ledger/dispatches.js';
import type { DispatchQuery } from '../../shared/ledger/export.js';
import { getDispatch } from '../../shared/ledger/queries.js';
import type { ServiceModule } from '../../shared/module.js';
import { signingKeys } from '../../shared/signing/keys.js';
import { decodeCursor, encodeCursor } from './cursor.js';
import { mountDutyRoutes } from './duties.js';
import { readListPage } from './flagged.js';
import {
  dispatchDetail,
  exportQuery,
  listQuery,
  listResponse,
  rangeVerifyResponse,
  verifyResponse,
  type ListQuery,
} from './schemas.js';
import { streamExport } from './stream.js';
import { verifyDispatch, verifyRange } from './verify.js';
import { detailOf, summaryOf } from './view.js';

/**
 * The auditors' ledger API (docs/api.md, Ledger API): read-only, `Authorization: Bearer svc_ak_…`
 * with scope `ledger:read`. Every read is confined to the key's app: queries run on that app's
 * index partitions, and a dispatch of another app answers exactly like an unknown one (404).
 */

export const LEDGER_PREFIX = '/api/v1/ledger';

/**
 * Most index items one list request evaluates. With a sparse filter (a rare flag) a page may
 * then come back short or empty, but always with a cursor that moves forward.
 */
export const MAX_EVALUATED_PER_PAGE = 1_000;

function dispatchQuery(app: App, q: Omit<ListQuery, 'limit' | 'cursor'>): DispatchQuery {
  return {
    appId: app.appId,
    referenceId: q.referenceId,
    event: q.event,
    flag: q.flag === undefined ? undefined : q.flag === 'none' ? null : q.flag,
    from: q.from,
    to: q.to,
  };
}

const notFound = () => new AppError('SVC_NOT_FOUND', 'No such dispatch');

/** The dispatch id of a path, or 404: an id that could never exist names nothing. */
function pathDispatchId(raw: unknown): string {
  const id = String(raw);
  if (!patterns.dispatchId.test(id)) throw notFound();
  return id;
}

const common = {
  401: { description: 'Missing, wrong or revoked API key' },
  403: { description: 'The API key lacks the scope ledger:read' },
  429: { description: 'Rate limited' },
};

export const ledgerService: ServiceModule = {
  name: 'ledger',
  mount(app, rt) {
    const keys = signingKeys(rt.config);
    const r = Router();
    const read = [requireApiKey(rt, 'ledger:read'), rateLimit(rt)];
    const doc = (d: Omit<RouteDoc, 'tag' | 'security'>) =>
      rt.docs.add({ ...d, path: `${LEDGER_PREFIX}${d.path}`, tag: 'Ledger', security: ['apiKey'] });

    r.get('/dispatches', ...read, async (req, res) => {
      const q = parseBody(listQuery, req.query, 'query');
      const dq = dispatchQuery(appOf(res), q);
      const page = await readListPage(rt, dq, {
        startKey: q.cursor === undefined ? undefined : decodeCursor(dq, q.cursor),
        limit: q.limit,
        maxEvaluated: MAX_EVALUATED_PER_PAGE,
      });
      res.json({
        items: page.items.map((i) => summaryOf(toDispatch(i))),
        nextCursor: page.nextKey ? encodeCursor(dq, page.nextKey) : null,
      });
    });
    doc({
      method: 'get',
      path: '/dispatches',
      summary:
        'List the app’s dispatches, oldest first, by time range and optionally principal, event and flag (current or worst; scope ledger:read)',
      query: listQuery,
      responses: {
        200: {
          description: 'A page; nextCursor is null once the range is exhausted',
          schema: listResponse,
        },
        ...common,
        422: { description: 'Invalid query, or a cursor from another query or app' },
      },
    });

    r.get('/dispatches/:dispatchId/verify', ...read, async (req, res) => {
      res.json(await verifyDispatch(rt, keys, appOf(res), pathDispatchId(req.params.dispatchId)));
    });
    doc({
      method: 'get',
      path: '/dispatches/{dispatchId}/verify',
      summary:
        'Recompute the dispatch’s hash chain, check its head fields (complianceFlag, deliveryStatus, attempts) against its entries and its sealed entries against the signed checkpoint of its period (scope ledger:read)',
      responses: {
        200: {
          description: 'The result; ok false names the first broken entry',
          schema: verifyResponse,
        },
        ...common,
        404: { description: 'No such dispatch for this app' },
      },
    });

    r.get('/dispatches/:dispatchId', ...read, async (req, res) => {
      const d = await getDispatch(rt, pathDispatchId(req.params.dispatchId));
      if (!d || d.appId !== appOf(res).appId) throw notFound();
      res.json(detailOf(d));
    });
    doc({
      method: 'get',
      path: '/dispatches/{dispatchId}',
      summary: 'One dispatch with its attempts, postbacks and flag history (scope ledger:read)',
      responses: {
        200: { description: 'The dispatch', schema: dispatchDetail },
        ...common,
        404: { description: 'No such dispatch for this app' },
      },
    });

    r.get('/verify', ...read, async (req, res) => {
      const q = parseBody(exportQuery, req.query, 'query');
      const gone = new AbortController();
      res.on('close', () => gone.abort());
      res.json(
        await verifyRange(
          rt,
          keys,
          { appId: appOf(res).appId, from: q.from, to: q.to },
          gone.signal,
        ),
      );
    });
    doc({
      method: 'get',
      path: '/verify',
      summary:
        'Verify every dispatch created in a range (at most 31 days) as an auditor would verify its export: chains, head fields, and each period against its signed checkpoint, including dispatches that are sealed but missing (scope ledger:read)',
      query: exportQuery,
      responses: {
        200: {
          description: 'The verdict; ok false lists what failed',
          schema: rangeVerifyResponse,
        },
        ...common,
        422: { description: 'Invalid range (missing, reversed or longer than 31 days)' },
      },
    });

    mountDutyRoutes(r, rt, { read, doc, common });

    r.get('/export', ...read, async (req, res) => {
      const q = parseBody(exportQuery, req.query, 'query');
      await streamExport(rt, keys.active, res, { appId: appOf(res).appId, from: q.from, to: q.to });
    });
    doc({
      method: 'get',
      path: '/export',
      summary:
        'Export a time range (at most 31 days) as NDJSON: the signed checkpoints that seal it ({"type":"checkpoint",…}, with the Merkle leaves of the periods in range), one {"type":"dispatch",…} line per dispatch with its entries, one {"type":"grievance",…} or {"type":"breach",…} line per grievance filed or breach recorded in range, then {"type":"summary",…} signed like the checkpoints (range, line counts, exportedAt, the newest checkpoint); `npm run ledger:verify` checks it offline against /.well-known/svc-keys.json (scope ledger:read)',
      query: exportQuery,
      responses: {
        200: {
          description:
            'application/x-ndjson stream; complete only when the last line is the summary',
        },
        ...common,
        422: { description: 'Invalid range (missing, reversed or longer than 31 days)' },
      },
    });

    app.use(LEDGER_PREFIX, r);
  },
};
