import type { RequestHandler, Router } from 'express';
import {
  fileBody,
  principalGrievanceSchema,
  principalListQuery,
  principalListResponse,
  toPrincipalView,
} from '../../shared/domain/duties/grievances.js';
import { fileGrievance, listPrincipalGrievances } from '../../shared/storage/grievances/store.js';
import { appOf } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';
import { principalOf } from './auth.js';

/**
 * The principal's grievances on the hosted portal's API (docs/grievances-and-breaches.md): listed
 * with the app's answers, and filed with the portal token of the e-mailed link.
 */
export function mountPortalGrievances(
  r: Router,
  rt: Runtime,
  o: {
    read: RequestHandler[];
    write: RequestHandler[];
    doc: (d: Omit<RouteDoc, 'tag'>) => void;
    common: RouteDoc['responses'];
  },
): void {
  r.get('/api/:referenceId/grievances', ...o.read, async (req, res) => {
    const q = parseBody(principalListQuery, req.query, 'query');
    const page = await listPrincipalGrievances(rt, appOf(res).appId, principalOf(res), q);
    res.set('Cache-Control', 'no-store').json({
      items: page.items.map(toPrincipalView),
      nextCursor: page.nextCursor,
    });
  });
  o.doc({
    method: 'get',
    path: '/api/{referenceId}/grievances',
    summary: 'The principal’s grievances, newest first, with the app’s answers',
    query: principalListQuery,
    responses: {
      200: { description: 'One page', schema: principalListResponse },
      ...o.common,
    },
  });

  r.post('/api/:referenceId/grievances', ...o.write, async (req, res) => {
    const body = parseBody(fileBody, req.body);
    const g = await fileGrievance(rt, appOf(res), {
      referenceId: principalOf(res),
      subject: body.subject,
      description: body.description,
      via: 'portal',
    });
    res.status(201).json(toPrincipalView(g));
  });
  o.doc({
    method: 'post',
    path: '/api/{referenceId}/grievances',
    summary: 'File a grievance as the principal; they are e-mailed a receipt with the answer date',
    body: fileBody,
    responses: {
      201: { description: 'Filed', schema: principalGrievanceSchema },
      ...o.common,
    },
  });
}
