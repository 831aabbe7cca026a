import { Router, type Express, type Response } from 'express';
import { z } from 'zod';
import {
  answerBody,
  appFileBody,
  grievanceIdPattern,
  grievanceSchema,
  listQuery,
  type Grievance,
  listResponse,
} from '../../shared/domain/duties/grievances.js';
import {
  answerGrievance,
  fileGrievance,
  getGrievance,
  listGrievances,
  resolvePrincipal,
} from '../../shared/storage/grievances/store.js';
import type { ApiKeyScope } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { requireApiKey } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { appOf, locals } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * What a write answers to an API key without consents:read: the grievance's id, status and
 * deadlines, never its subject, description or answer, so filing or answering cannot serve as
 * a read of what a principal wrote.
 */
const grievanceReceipt = grievanceSchema.pick({
  grievanceId: true,
  referenceId: true,
  status: true,
  createdAt: true,
  dueAt: true,
  answeredAt: true,
  resolution: true,
});
const writeResponse = z.union([grievanceSchema, grievanceReceipt]);

function answer(res: Response, g: Grievance): Grievance | z.infer<typeof grievanceReceipt> {
  if (locals(res).apiKey?.scopes.includes('consents:read')) return g;
  return grievanceReceipt.parse(g);
}

/**
 * Grievances for the app's server (docs/grievances-and-breaches.md), with the record API's
 * credential: `Authorization: Bearer svc_ak_…`, scope consents:read to read, consents:write to
 * file for a principal or answer. Every read and change is confined to the key's app: another
 * app's grievance answers exactly like an unknown one (404).
 */

export const GRIEVANCES_PREFIX = '/api/v1/grievances';

const common = {
  401: { description: 'Missing, wrong or revoked API key' },
  403: { description: 'The API key lacks the scope' },
  429: { description: 'Rate limited' },
};

const notFound = () => new AppError('SVC_NOT_FOUND', 'Unknown grievance');

function pathId(raw: unknown): string {
  const id = String(raw);
  if (!grievanceIdPattern.test(id)) throw notFound();
  return id;
}

export function mountGrievanceRoutes(app: Express, rt: Runtime): void {
  const r = Router();
  const read = [requireApiKey(rt, 'consents:read'), rateLimit(rt)];
  const write = [requireApiKey(rt, 'consents:write'), rateLimit(rt), idempotency(rt, 'consents')];
  const doc = (d: Omit<RouteDoc, 'tag' | 'security'>, scope: ApiKeyScope) =>
    rt.docs.add({
      ...d,
      summary: `${d.summary} (scope ${scope})`,
      path: `${GRIEVANCES_PREFIX}${d.path}`,
      tag: 'Grievances',
      security: ['apiKey'],
    });

  r.post('/', ...write, async (req, res) => {
    const body = parseBody(appFileBody, req.body);
    const a = appOf(res);
    const who = await resolvePrincipal(rt, a.appId, body);
    const g = await fileGrievance(rt, a, {
      referenceId: who.referenceId,
      subject: body.subject,
      description: body.description,
      via: 'api',
    });
    res.status(201).location(`${GRIEVANCES_PREFIX}/${g.grievanceId}`).json(answer(res, g));
  });
  doc(
    {
      method: 'post',
      path: '',
      summary:
        'File a grievance for a principal (named by referenceId or userId); the principal is e-mailed',
      body: appFileBody,
      responses: {
        201: {
          description: 'Filed, with its deadline (a receipt without consents:read)',
          schema: writeResponse,
        },
        ...common,
        404: { description: 'No such principal for this app' },
        422: { description: 'Invalid body' },
      },
    },
    'consents:write',
  );

  r.get('/', ...read, async (req, res) => {
    const q = parseBody(listQuery, req.query, 'query');
    res.json(await listGrievances(rt, appOf(res).appId, q));
  });
  doc(
    {
      method: 'get',
      path: '',
      summary: 'List the app’s grievances, oldest first, by time range, status and flag',
      query: listQuery,
      responses: {
        200: { description: 'One page', schema: listResponse },
        ...common,
        422: { description: 'Invalid query or cursor' },
      },
    },
    'consents:read',
  );

  r.get('/:grievanceId', ...read, async (req, res) => {
    const g = await getGrievance(rt, appOf(res).appId, pathId(req.params.grievanceId));
    if (!g) throw notFound();
    res.json(g);
  });
  doc(
    {
      method: 'get',
      path: '/{grievanceId}',
      summary: 'Read one grievance with its deadline, answer and flag history',
      responses: {
        200: { description: 'The grievance', schema: grievanceSchema },
        ...common,
        404: { description: 'No such grievance for this app' },
      },
    },
    'consents:read',
  );

  r.post('/:grievanceId/answer', ...write, async (req, res) => {
    const id = pathId(req.params.grievanceId);
    const body = parseBody(answerBody, req.body);
    res.json(answer(res, await answerGrievance(rt, appOf(res).appId, id, body)));
  });
  doc(
    {
      method: 'post',
      path: '/{grievanceId}/answer',
      summary:
        'Answer a grievance (once); the principal is e-mailed the answer. Late answers keep the breach flag',
      body: answerBody,
      responses: {
        200: {
          description: 'The answered grievance (a receipt without consents:read)',
          schema: writeResponse,
        },
        ...common,
        404: { description: 'No such grievance for this app' },
        409: { description: 'Answered already' },
        422: { description: 'Invalid body' },
      },
    },
    'consents:write',
  );

  app.use(GRIEVANCES_PREFIX, r);
}
