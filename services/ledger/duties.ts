import type { Router, RequestHandler } from 'express';
import {
  breachIdPattern,
  breachSchema,
  listQuery as breachQuery,
  listResponse as breachList,
} from '../../shared/domain/duties/breaches.js';
import { affectedOf, getBreach, listBreaches } from '../../shared/storage/breaches/store.js';
import { AppError } from '../../shared/errors.js';
import {
  grievanceIdPattern,
  grievanceSchema,
  listQuery as grievanceQuery,
  listResponse as grievanceList,
} from '../../shared/domain/duties/grievances.js';
import { getGrievance, listGrievances } from '../../shared/storage/grievances/store.js';
import { appOf } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';
import { z } from 'zod';

/**
 * Grievances and breaches for auditors (docs/grievances-and-breaches.md, Ledger): listed by time
 * and flag, one by one (a breach with its affected principals), and in the NDJSON export
 * (`exportDuties`). Confined to the key's app like every ledger read.
 */

const breachDetail = breachSchema.extend({
  affected: z.array(z.object({ referenceId: z.string(), userId: z.string().nullable() })),
});

export function mountDutyRoutes(
  r: Router,
  rt: Runtime,
  o: {
    read: RequestHandler[];
    doc: (d: Omit<RouteDoc, 'tag' | 'security'>) => void;
    common: RouteDoc['responses'];
  },
): void {
  r.get('/grievances', ...o.read, async (req, res) => {
    res.json(
      await listGrievances(rt, appOf(res).appId, parseBody(grievanceQuery, req.query, 'query')),
    );
  });
  o.doc({
    method: 'get',
    path: '/grievances',
    summary:
      'List the app’s grievances, oldest first, by time filed, status and flag (none, at_risk, breach, ok; scope ledger:read)',
    query: grievanceQuery,
    responses: {
      200: { description: 'One page', schema: grievanceList },
      ...o.common,
      422: { description: 'Invalid query or cursor' },
    },
  });

  r.get('/grievances/:grievanceId', ...o.read, async (req, res) => {
    const id = String(req.params.grievanceId);
    const g = grievanceIdPattern.test(id)
      ? await getGrievance(rt, appOf(res).appId, id)
      : undefined;
    if (!g) throw new AppError('SVC_NOT_FOUND', 'No such grievance');
    res.json(g);
  });
  o.doc({
    method: 'get',
    path: '/grievances/{grievanceId}',
    summary: 'One grievance with its deadline, answer and flag history (scope ledger:read)',
    responses: {
      200: { description: 'The grievance', schema: grievanceSchema },
      ...o.common,
      404: { description: 'No such grievance for this app' },
    },
  });

  r.get('/breaches', ...o.read, async (req, res) => {
    res.json(await listBreaches(rt, appOf(res).appId, parseBody(breachQuery, req.query, 'query')));
  });
  o.doc({
    method: 'get',
    path: '/breaches',
    summary: 'List the app’s recorded personal data breaches, oldest first (scope ledger:read)',
    query: breachQuery,
    responses: {
      200: { description: 'One page', schema: breachList },
      ...o.common,
      422: { description: 'Invalid query or cursor' },
    },
  });

  r.get('/breaches/:breachId', ...o.read, async (req, res) => {
    const id = String(req.params.breachId);
    const appId = appOf(res).appId;
    const b = breachIdPattern.test(id) ? await getBreach(rt, appId, id) : undefined;
    if (!b) throw new AppError('SVC_NOT_FOUND', 'No such breach');
    res.json({ ...b, affected: await affectedOf(rt, appId, id) });
  });
  o.doc({
    method: 'get',
    path: '/breaches/{breachId}',
    summary:
      'One breach with what principals were told, its Board-report deadline, flag history and affected principals (scope ledger:read)',
    responses: {
      200: { description: 'The breach', schema: breachDetail },
      ...o.common,
      404: { description: 'No such breach for this app' },
    },
  });
}

const PAGE = 25;

/**
 * The export's grievance and breach lines for records created in [from, to), oldest first, a
 * page at a time (memory stays bounded). Not part of the signed dispatch evidence: the offline
 * verifier counts and skips them.
 */
export async function* exportDuties(
  rt: Runtime,
  q: { appId: string; from: string; to: string },
  signal: AbortSignal,
): AsyncGenerator<Record<string, unknown>> {
  let cursor: string | undefined;
  do {
    const page = await listGrievances(rt, q.appId, { from: q.from, to: q.to, limit: PAGE, cursor });
    for (const g of page.items) yield { type: 'grievance', ...g };
    cursor = page.nextCursor ?? undefined;
  } while (cursor && !signal.aborted);
  do {
    const page = await listBreaches(rt, q.appId, { from: q.from, to: q.to, limit: PAGE, cursor });
    for (const b of page.items)
      yield { type: 'breach', ...b, affected: await affectedOf(rt, q.appId, b.breachId) };
    cursor = page.nextCursor ?? undefined;
  } while (cursor && !signal.aborted);
}
