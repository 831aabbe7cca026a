import type { RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import {
  fileBody,
  grievanceIdPattern,
  principalGrievanceSchema,
  principalListQuery,
  principalListResponse,
  referenceId,
  toPrincipalView,
} from '../../shared/domain/duties/grievances.js';
import {
  fileGrievance,
  getGrievance,
  listPrincipalGrievances,
  resolvePrincipal,
} from '../../shared/storage/grievances/store.js';
import { AppError } from '../../shared/errors.js';
import { appOf, locals } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * A principal's own grievances on the public API (docs/grievances-and-breaches.md): the
 * embeddable dashboard files and lists them with the principal token, the app's server may do
 * the same with its secret key for a principal it names. A principal sees only their own
 * grievances, with the app's answer, never the compliance flags.
 */

const listQuery = principalListQuery.extend({ referenceId });
const getQuery = z.object({ referenceId: referenceId.optional() });
const postBody = fileBody.extend({ referenceId: referenceId.optional() });

export function mountPrincipalGrievances(
  r: Router,
  rt: Runtime,
  o: {
    read: RequestHandler[];
    write: RequestHandler[];
    /** The principal the caller may act for (a browser: its token's), see index.ts. */
    principalFor: (res: Response, named: string | undefined) => string | undefined;
    doc: (d: Omit<RouteDoc, 'tag' | 'security'>) => void;
    common: RouteDoc['responses'];
  },
): void {
  const browser = (res: Response) => locals(res).via === 'siteKey';
  const notFound = () => new AppError('SVC_NOT_FOUND', 'Unknown grievance');

  r.get('/my-grievances', ...o.read, async (req, res) => {
    const q = parseBody(listQuery, req.query, 'query');
    const ref = o.principalFor(res, q.referenceId) ?? q.referenceId;
    const page = await listPrincipalGrievances(rt, appOf(res).appId, ref, q);
    res.set('Cache-Control', 'no-store').json({
      items: page.items.map(toPrincipalView),
      nextCursor: page.nextCursor,
    });
  });
  o.doc({
    method: 'get',
    path: '/my-grievances',
    summary: 'A principal’s grievances, newest first, with the app’s answers',
    query: listQuery,
    responses: {
      200: { description: 'One page', schema: principalListResponse },
      ...o.common,
      422: { description: 'Invalid query or cursor' },
    },
  });

  r.post('/my-grievances', ...o.write, async (req, res) => {
    const body = parseBody(postBody, req.body);
    const named = o.principalFor(res, body.referenceId);
    if (named === undefined)
      throw new AppError('SVC_VALIDATION_FAILED', 'The body is not valid', {
        errors: [{ path: '/referenceId', message: 'is required with a secret key' }],
      });
    const a = appOf(res);
    // A browser's token names a principal of its app; a server's referenceId is checked here.
    if (!browser(res)) await resolvePrincipal(rt, a.appId, { referenceId: named });
    const g = await fileGrievance(rt, a, {
      referenceId: named,
      subject: body.subject,
      description: body.description,
      via: browser(res) ? 'dashboard' : 'api',
    });
    res.status(201).json(toPrincipalView(g));
  });
  o.doc({
    method: 'post',
    path: '/my-grievances',
    summary:
      'File a grievance as the principal (dashboard) or for a named principal (secret key); the principal is e-mailed',
    body: postBody,
    responses: {
      201: {
        description: 'Filed, with the date it must be answered by',
        schema: principalGrievanceSchema,
      },
      ...o.common,
      404: { description: 'Unknown referenceId' },
      422: { description: 'Invalid body' },
    },
  });

  r.get('/my-grievances/:grievanceId', ...o.read, async (req, res) => {
    const q = parseBody(getQuery, req.query, 'query');
    const ref = o.principalFor(res, q.referenceId);
    const id = String(req.params.grievanceId);
    const g = grievanceIdPattern.test(id)
      ? await getGrievance(rt, appOf(res).appId, id)
      : undefined;
    if (!g || (ref !== undefined && g.referenceId !== ref)) throw notFound();
    res.set('Cache-Control', 'no-store').json(toPrincipalView(g));
  });
  o.doc({
    method: 'get',
    path: '/my-grievances/{grievanceId}',
    summary: 'One of the principal’s grievances, with the app’s answer',
    query: getQuery,
    responses: {
      200: { description: 'The grievance', schema: principalGrievanceSchema },
      ...o.common,
      404: { description: 'Unknown grievance' },
    },
  });
}
