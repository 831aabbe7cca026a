import express, { Router, type ErrorRequestHandler, type Response } from 'express';
import { API_KEY_SCOPES } from '../../shared/domain/apiKeys.js';
import { checklistOf } from '../../shared/apps/go-live.js';
import { patterns } from '../../shared/domain/ids.js';
import { AppError, errorCodes } from '../../shared/errors.js';
import { loadPageAssets } from '../../shared/http/page-assets.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { getDispatch, verifyDispatchChain } from '../../shared/ledger/queries.js';
import type { ServiceModule } from '../../shared/module.js';
import { mountChanges } from './changes.js';
import { appFor, appPage as loadAppPage, listApps } from './data.js';
import { sendPage } from './html.js';
import { appListPage, appPage, appPath, dispatchPage, errorPage, signInPage } from './pages.js';
import {
  CONSOLE_PATH,
  clearSessionCookie,
  deleteSession,
  requireCsrf,
  requireSession,
  sessionOf,
  signIn,
  type Session,
} from './session.js';
import { mountTools } from './tools.js';
import { checklistSection, sandboxLinkSection } from './tools-pages.js';

/**
 * The web console (docs/api.md, Console): server-rendered pages for operators (admin token)
 * and app owners (an API key with the `console` scope), behind a session cookie with a CSRF
 * token on every change (docs/security.md, Console sessions). It is a client of the domain,
 * like the admin API: apps, API keys, notices, endpoint health and the ledger, read and
 * changed through their own functions, and the go-live checklist and sandbox tools
 * (tools.ts). Pages work without script; console.js only adds copy buttons and confirmations.
 */

const ASSET_TYPES = {
  'console.js': 'text/javascript',
  'console.css': 'text/css',
  'favicon.svg': 'image/svg+xml',
} as const;
type AssetName = keyof typeof ASSET_TYPES;

const param = (v: unknown) => (typeof v === 'string' ? v : '');

const DONE: Record<string, string> = {
  revoked: 'The API key is revoked.',
  're-enable':
    'The newest dispatch is queued again; the endpoint is enabled once a delivery succeeds.',
  'nothing-to-resend': 'There is no dispatch to resend yet.',
  attested: 'The item is attested: who, when and the note are kept with it.',
};

/**
 * Errors as pages for a browser, problem+json otherwise. A refused CSRF token is always
 * problem+json (403), and a failed sign-in shows the sign-in page again (401, or 429 with
 * Retry-After once the address has failed too often).
 */
const consoleErrors: ErrorRequestHandler = (err: unknown, req, res, next) => {
  if (
    res.headersSent ||
    !(err instanceof AppError) ||
    (err as { csrf?: boolean }).csrf === true ||
    !(req.get('accept') ?? '').includes('text/html')
  )
    return next(err);
  if (err.retryAfterS !== undefined) res.setHeader('Retry-After', String(err.retryAfterS));
  if (req.path === '/sign-in') return sendPage(res, err.status, signInPage(err.message));
  const s = (res.locals as { consoleSession?: Session }).consoleSession;
  const detail = err.errors?.length
    ? `${err.message}: ${err.errors.map((e) => `${e.path} ${e.message}`).join('; ')}`
    : err.message;
  sendPage(res, err.status, errorPage(errorCodes[err.code].title, detail, s));
};

export const consoleService: ServiceModule = {
  name: 'console',
  async mount(app, rt) {
    const assets = await loadPageAssets(new URL('./', import.meta.url), 'console');
    const r = Router();
    r.use(express.urlencoded({ extended: false, limit: rt.config.BODY_LIMIT_BYTES }));
    const session = requireSession(rt);
    const read = [session, rateLimit(rt)];
    const write = [session, requireCsrf(rt), rateLimit(rt)];
    const redirect = (res: Response, to: string) => res.redirect(303, to);
    const appOf = (res: Response, appId: unknown) => appFor(rt, sessionOf(res), param(appId));

    r.get('/assets/:name', (req, res, next) => {
      const name = req.params.name as AssetName;
      if (!Object.hasOwn(ASSET_TYPES, name)) return next();
      res
        .type(ASSET_TYPES[name])
        .set({ 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' })
        .send(assets[name]);
    });

    r.get('/sign-in', (_req, res) => sendPage(res, 200, signInPage()));
    r.post('/sign-in', signIn(rt));
    r.post('/sign-out', session, requireCsrf(rt), async (req, res) => {
      await deleteSession(rt, sessionOf(res).id);
      clearSessionCookie(res);
      redirect(res, `${CONSOLE_PATH}/sign-in`);
    });

    r.get('/', ...read, async (req, res) => {
      const s = sessionOf(res);
      if (s.kind === 'apiKey') {
        const own = await appFor(rt, s, s.appId);
        return sendPage(res, 200, appListPage(s, [own], null));
      }
      const cursor = typeof req.query.cursor === 'string' ? req.query.cursor : undefined;
      const { apps, next } = await listApps(rt, cursor);
      sendPage(res, 200, appListPage(s, apps, next));
    });

    r.get('/open', ...read, (req, res) => {
      const id = param(req.query.appId).trim();
      if (!patterns.appId.test(id)) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
      redirect(res, appPath(id));
    });

    r.get('/apps/:appId', ...read, async (req, res) => {
      const s = sessionOf(res);
      const a = await appOf(res, req.params.appId);
      const key = param(req.query.done);
      const done = Object.hasOwn(DONE, key) ? DONE[key] : undefined;
      const [data, checklist] = await Promise.all([loadAppPage(rt, a), checklistOf(rt, a)]);
      sendPage(
        res,
        200,
        appPage(s, data, {
          baseUrl: rt.config.PUBLIC_BASE_URL,
          scopes: API_KEY_SCOPES,
          tools: `${checklistSection(s, a, checklist)}\n${sandboxLinkSection(a)}`,
          ...(done ? { notice: done } : {}),
        }),
      );
    });

    mountChanges(r, rt, write);
    mountTools(r, rt, read, write);

    r.get('/apps/:appId/dispatches/:dispatchId', ...read, async (req, res) => {
      const s = sessionOf(res);
      const a = await appOf(res, req.params.appId);
      const id = param(req.params.dispatchId);
      const d = patterns.dispatchId.test(id) ? await getDispatch(rt, id) : undefined;
      if (!d || d.appId !== a.appId) throw new AppError('SVC_NOT_FOUND', 'Unknown dispatch');
      const c = await verifyDispatchChain(rt, id);
      const chain = c.ok
        ? { ok: true, detail: `Intact: ${c.entries} entries recompute to the head hash` }
        : { ok: false, detail: `Broken at ${c.at}: ${c.reason}` };
      sendPage(res, 200, dispatchPage(s, a, d, chain));
    });

    r.use(consoleErrors);
    app.use(CONSOLE_PATH, r);
  },
};
