import { z } from 'zod';
import type { Router } from 'express';
import { createNotice, getNotice, listNotices, updateNotice } from '../../shared/domain/notices.js';
import { AppError } from '../../shared/errors.js';
import { requireAdmin } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { Runtime } from '../../shared/runtime.js';
import { loadApp } from './apps.js';
import { ADMIN_PREFIX } from './prefix.js';
import { noticeBody, noticeQuery, noticeSchema } from './schemas.js';

const errors = {
  401: { description: 'Missing or wrong admin token' },
  404: { description: 'Unknown app or notice' },
  409: {
    description:
      'Another notice of this app with the same trigger key already covers one of the regions (or is the one without regions)',
  },
  422: { description: 'Invalid body (including an unknown or repeated region code)' },
};

export function mountNoticeRoutes(router: Router, rt: Runtime): void {
  const admin = requireAdmin(rt);
  const write = [admin, rateLimit(rt), idempotency(rt, 'admin')];
  const doc = (d: Omit<Parameters<Runtime['docs']['add']>[0], 'tag' | 'security'>) =>
    rt.docs.add({ ...d, path: `${ADMIN_PREFIX}${d.path}`, tag: 'admin', security: ['admin'] });

  router.post('/apps/:appId/notices', ...write, async (req, res) => {
    const appId = req.params.appId as string;
    const body = parseBody(noticeBody, req.body);
    await loadApp(rt, appId);
    const notice = await createNotice(rt, appId, body);
    rt.log.info({ appId, noticeId: notice.noticeId }, 'notice created');
    res
      .status(201)
      .location(`${ADMIN_PREFIX}/apps/${appId}/notices/${notice.noticeId}`)
      .json(notice);
  });
  doc({
    method: 'post',
    path: '/apps/{appId}/notices',
    summary: 'Create a notice (version 1)',
    body: noticeBody,
    responses: { 201: { description: 'Version 1', schema: noticeSchema }, ...errors },
  });

  router.get('/apps/:appId/notices', admin, async (req, res) => {
    const appId = req.params.appId as string;
    await loadApp(rt, appId);
    res.json({ items: await listNotices(rt, appId) });
  });
  doc({
    method: 'get',
    path: '/apps/{appId}/notices',
    summary: 'List the latest version of each notice',
    responses: {
      200: { description: 'Notices', schema: z.object({ items: z.array(noticeSchema) }) },
      401: errors[401],
      404: errors[404],
    },
  });

  router.get('/apps/:appId/notices/:noticeId', admin, async (req, res) => {
    const { version } = parseBody(noticeQuery, req.query, 'query');
    const notice = await getNotice(
      rt,
      req.params.appId as string,
      req.params.noticeId as string,
      version,
    );
    if (!notice)
      throw new AppError('SVC_NOT_FOUND', version ? 'Unknown notice or version' : 'Unknown notice');
    res.json(notice);
  });
  doc({
    method: 'get',
    path: '/apps/{appId}/notices/{noticeId}',
    summary: 'Read a notice: the latest version, or ?version=N',
    query: noticeQuery,
    responses: {
      200: { description: 'The version', schema: noticeSchema },
      401: errors[401],
      404: errors[404],
      422: { description: 'Invalid query' },
    },
  });

  router.put('/apps/:appId/notices/:noticeId', ...write, async (req, res) => {
    const appId = req.params.appId as string;
    const body = parseBody(noticeBody, req.body);
    const notice = await updateNotice(rt, appId, req.params.noticeId as string, body);
    rt.log.info({ appId, noticeId: notice.noticeId, version: notice.version }, 'notice changed');
    res.json(notice);
  });
  doc({
    method: 'put',
    path: '/apps/{appId}/notices/{noticeId}',
    summary: 'Replace a notice’s content: a new version (an unchanged body returns the latest)',
    body: noticeBody,
    responses: { 200: { description: 'The new version', schema: noticeSchema }, ...errors },
  });
}
