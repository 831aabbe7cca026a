import type { Router } from 'express';
import {
  addPrincipalsBody,
  boardReportBody,
  breachSchema,
  listQuery,
  listResponse,
  recordBody,
} from '../../shared/domain/duties/breaches.js';
import {
  addAffected,
  fileBoardReport,
  getBreach,
  listBreaches,
  recordBreach,
} from '../../shared/storage/breaches/store.js';
import { AppError } from '../../shared/errors.js';
import {
  MAX_GRIEVANCE_DAYS,
  settingsBody,
  settingsResponse,
} from '../../shared/domain/duties/grievances.js';
import { responseDaysOf, setResponseDays } from '../../shared/storage/grievances/store.js';
import { requireAdmin } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';
import { loadApp } from './apps.js';
import { ADMIN_PREFIX } from './prefix.js';

/**
 * Breaches (DPDP Rule 7) and the grievance response window (Rule 14), for the operator
 * (docs/grievances-and-breaches.md). Recording a breach e-mails every affected principal
 * through the notifier and starts the 72-hour clock of the report to the Board.
 */

const errors = {
  401: { description: 'Missing or wrong admin token' },
  404: { description: 'Unknown app or breach' },
};

const param = (v: unknown) => String(v);

/** The middleware and doc registration every route here uses. */
function toolsOf(rt: Runtime) {
  const admin = requireAdmin(rt);
  return {
    admin,
    write: [admin, rateLimit(rt), idempotency(rt, 'admin')],
    doc: (d: Omit<Parameters<Runtime['docs']['add']>[0], 'tag' | 'security'>) =>
      rt.docs.add({ ...d, path: `${ADMIN_PREFIX}${d.path}`, tag: 'admin', security: ['admin'] }),
  };
}

export function mountBreachRoutes(router: Router, rt: Runtime): void {
  const { admin, write, doc } = toolsOf(rt);

  router.post('/apps/:appId/breaches', ...write, async (req, res) => {
    const app = await loadApp(rt, param(req.params.appId));
    const body = parseBody(recordBody, req.body);
    const b = await recordBreach(rt, app, body);
    rt.log.warn(
      { appId: app.appId, breachId: b.breachId, affected: b.affectedCount },
      'personal data breach recorded',
    );
    res.status(201).location(`${ADMIN_PREFIX}/apps/${app.appId}/breaches/${b.breachId}`).json(b);
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/breaches',
    summary:
      'Record a personal data breach and its affected principals (userId and/or referenceId, at most 1000 per request); each is e-mailed once, and the 72-hour clock of the report to the Board starts at detectedAt',
    body: recordBody,
    responses: {
      201: { description: 'Recorded', schema: breachSchema },
      ...errors,
      422: {
        description: 'Invalid body, detectedAt in the future, or a principal not of this app',
      },
    },
  });

  router.get('/apps/:appId/breaches', admin, async (req, res) => {
    const app = await loadApp(rt, param(req.params.appId));
    res.json(await listBreaches(rt, app.appId, parseBody(listQuery, req.query, 'query')));
  });
  doc({
    method: 'get',
    path: '/apps/{appId}/breaches',
    summary: 'List an app’s breaches, oldest first, by time recorded and flag',
    query: listQuery,
    responses: {
      200: { description: 'One page', schema: listResponse },
      ...errors,
      422: { description: 'Invalid query or cursor' },
    },
  });

  const loadBreach = async (appId: string, id: string) => {
    const b = await getBreach(rt, appId, id);
    if (!b) throw new AppError('SVC_NOT_FOUND', 'Unknown breach');
    return b;
  };

  router.get('/apps/:appId/breaches/:breachId', admin, async (req, res) => {
    const app = await loadApp(rt, param(req.params.appId));
    res.json(await loadBreach(app.appId, param(req.params.breachId)));
  });
  doc({
    method: 'get',
    path: '/apps/{appId}/breaches/{breachId}',
    summary: 'Read a breach with its Board-report deadline and flag history',
    responses: { 200: { description: 'The breach', schema: breachSchema }, ...errors },
  });

  router.post('/apps/:appId/breaches/:breachId/principals', ...write, async (req, res) => {
    const app = await loadApp(rt, param(req.params.appId));
    const body = parseBody(addPrincipalsBody, req.body);
    res.json(await addAffected(rt, app.appId, param(req.params.breachId), body.principals));
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/breaches/{breachId}/principals',
    summary:
      'Add affected principals to a breach (at most 1000 per request); each is e-mailed once per breach',
    body: addPrincipalsBody,
    responses: {
      200: { description: 'The breach', schema: breachSchema },
      ...errors,
      409: { description: 'The breach changed meanwhile; retry' },
      422: { description: 'Invalid body, or a principal not of this app' },
    },
  });

  router.post('/apps/:appId/breaches/:breachId/board-report', ...write, async (req, res) => {
    const app = await loadApp(rt, param(req.params.appId));
    const body = parseBody(boardReportBody, req.body ?? {});
    res.json(await fileBoardReport(rt, app.appId, param(req.params.breachId), body));
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/breaches/{breachId}/board-report',
    summary:
      'Record that the detailed report went to the Data Protection Board (now); later than 72 hours after detection keeps the breach flag',
    body: boardReportBody,
    responses: {
      200: { description: 'The breach', schema: breachSchema },
      ...errors,
      409: { description: 'The report is recorded already' },
      422: { description: 'Invalid body' },
    },
  });
}

/** The grievance response window of an app (1–90 days). */
export function mountGrievanceSettings(router: Router, rt: Runtime): void {
  const { admin, write, doc } = toolsOf(rt);
  const settings = (appId: string, days: number) => ({
    appId,
    responseDays: days,
    maxResponseDays: MAX_GRIEVANCE_DAYS,
  });

  router.get('/apps/:appId/grievance-settings', admin, async (req, res) => {
    const app = await loadApp(rt, param(req.params.appId));
    res.json(settings(app.appId, responseDaysOf(app)));
  });
  doc({
    method: 'get',
    path: '/apps/{appId}/grievance-settings',
    summary: 'The days the app takes at most to answer a grievance (90 unless set shorter)',
    responses: {
      200: { description: 'The settings', schema: settingsResponse },
      401: errors[401],
      404: { description: 'Unknown app' },
    },
  });

  router.put('/apps/:appId/grievance-settings', ...write, async (req, res) => {
    const app = await loadApp(rt, param(req.params.appId));
    const body = parseBody(settingsBody, req.body);
    await setResponseDays(rt, app.appId, body.responseDays);
    rt.log.info({ appId: app.appId, responseDays: body.responseDays }, 'grievance window set');
    res.json(settings(app.appId, body.responseDays));
  });
  doc({
    method: 'put',
    path: '/apps/{appId}/grievance-settings',
    summary:
      'Set the grievance response window for grievances filed from now on (1–90 days; longer is refused with 400 SVC_LEGAL_LIMIT)',
    body: settingsBody,
    responses: {
      200: { description: 'The settings', schema: settingsResponse },
      400: { description: 'Longer than the 90 days the Rules allow (SVC_LEGAL_LIMIT)' },
      401: errors[401],
      404: { description: 'Unknown app' },
      422: { description: 'Invalid body' },
    },
  });
}
