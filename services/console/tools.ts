import type { Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import { updateApp } from '../../shared/domain/apps.js';
import { attestInput, attestItem, goLive } from '../../shared/apps/go-live.js';
import { patterns } from '../../shared/domain/ids.js';
import { listInbox, testEventsOf } from '../../shared/domain/observations.js';
import {
  sandboxOnly,
  sendTestEvent,
  simulatePostback,
  simulatePostbackBody,
  testEventBody,
} from '../../shared/sandbox/tools.js';
import type { App } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { getDispatch, listDispatchesByApp } from '../../shared/ledger/queries.js';
import type { Runtime } from '../../shared/runtime.js';
import { parseForm } from './changes.js';
import { appFor } from './data.js';
import { sendPage } from './html.js';
import { appPath, shownOncePage } from './pages.js';
import { principalOf, sessionOf } from './session.js';
import {
  goLiveRefusedPage,
  sandboxPage,
  testEventNotice,
  wentLiveExtra,
  type SandboxView,
} from './tools-pages.js';

/**
 * The console's go-live checklist and sandbox tools (docs/api.md, Console): attest, go live,
 * and for sandbox apps the sandbox page (webhook URL, test events, postback simulator, inbox).
 * Each change is a POST behind the session and its CSRF token (`write`), goes through the same
 * domain function as its admin API route (shared/apps/go-live.ts, shared/sandbox/tools.ts), is
 * logged with `via: "console"`, and answers with a redirect to a page (a go-live answers with
 * the page that shows the live app's secret key once, or the refusal).
 */

/** Where an app's sandbox inbox is reached (docs/api.md, Sandbox tools). */
export const inboxUrl = (rt: Runtime, appId: string) =>
  `${new URL(rt.config.PUBLIC_BASE_URL).origin}/sandbox/inbox/${appId}`;

/** Recent dispatches the simulator offers (those that need a postback among them). */
const SIMULATOR_WINDOW = 50;

const param = (v: unknown) => (typeof v === 'string' ? v : '');
const redirect = (res: Response, to: string) => res.redirect(303, to);
const wantsHtml = (req: Request) => (req.get('accept') ?? '').includes('text/html');

const noteForm = z.object({ note: attestInput.shape.note });

const goLiveForm = z.object({ webhookUrl: z.string().trim().min(1).max(2000) });

const webhookForm = z.object({
  webhookUrl: z
    .string()
    .trim()
    .max(2000)
    .pipe(z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }))
    .refine((u) => !new URL(u).username && !new URL(u).password, 'must not hold credentials'),
});

const testEventForm = z.object({
  type: testEventBody.shape.type,
  variant: z.enum(['signed', 'mis-signed']),
});

const simulatorForm = z.object({
  dispatchId: simulatePostbackBody.shape.dispatchId,
  status: simulatePostbackBody.shape.status,
  risk: simulatePostbackBody.shape.risk,
  // An empty field is no remark.
  remark: z.preprocess((v) => (v === '' ? undefined : v), simulatePostbackBody.shape.remark),
});

const SANDBOX_DONE: Record<string, string> = {
  'webhook-url': 'The webhook URL is saved: webhooks and test events go there now.',
};

/** The last test event of each kind, as the sandbox tools keep it for the checklist. */
async function lastTests(rt: Runtime, appId: string) {
  const events = await testEventsOf(rt, appId);
  return {
    signed: events.signed,
    bad: events.bad_signature,
  };
}

/** The dispatch the simulator answered, when the query names one of this app's. */
async function simulatedOf(rt: Runtime, app: App, query: Request['query']) {
  const id = param(query.dispatch);
  if (!patterns.dispatchId.test(id)) return undefined;
  const dispatch = await getDispatch(rt, id);
  if (!dispatch || dispatch.appId !== app.appId) return undefined;
  const pb = param(query.postback);
  return { dispatch, postbackId: /^pb_[0-9A-HJKMNP-TV-Z]{26}$/.test(pb) ? pb : undefined };
}

async function sandboxView(rt: Runtime, app: App, req: Request): Promise<SandboxView> {
  const [inbox, tests, recent, simulated] = await Promise.all([
    listInbox(rt, app.appId),
    lastTests(rt, app.appId),
    listDispatchesByApp(rt, app.appId, { order: 'desc', limit: SIMULATOR_WINDOW }),
    simulatedOf(rt, app, req.query),
  ]);
  const done = param(req.query.done);
  let noticeHtml: string | undefined;
  let selectedType: string | undefined;
  if (done === 'test-event') {
    const bad = req.query.kind === 'mis-signed';
    const sent = bad ? tests.bad : tests.signed;
    noticeHtml = testEventNotice(sent, bad);
    selectedType = sent?.type;
  } else if (Object.hasOwn(SANDBOX_DONE, done)) noticeHtml = SANDBOX_DONE[done];
  else if (done === 'postback' && simulated) noticeHtml = 'The postback was accepted.';
  return {
    inboxUrl: inboxUrl(rt, app.appId),
    inbox,
    lastTests: tests,
    dispatches: recent.items.filter((d) => d.postbackRequired),
    simulated,
    selectedType,
    noticeHtml,
  };
}

export function mountTools(
  r: Router,
  rt: Runtime,
  read: RequestHandler[],
  write: RequestHandler[],
): void {
  const appOf = (res: Response, appId: unknown) => appFor(rt, sessionOf(res), param(appId));
  const sandboxPath = (a: App) => `${appPath(a.appId)}/sandbox`;

  r.post('/apps/:appId/checklist/:itemId/attest', ...write, async (req, res) => {
    const s = sessionOf(res);
    const a = await appOf(res, req.params.appId);
    const itemId = param(req.params.itemId);
    const { note } = parseForm(noteForm, req.body);
    await attestItem(rt, a, itemId, { by: principalOf(s), note });
    rt.log.info({ appId: a.appId, itemId, via: 'console' }, 'checklist item attested');
    redirect(res, `${appPath(a.appId)}?done=attested#item-${encodeURIComponent(itemId)}`);
  });

  r.post('/apps/:appId/go-live', ...write, async (req, res) => {
    const s = sessionOf(res);
    const a = await appOf(res, req.params.appId);
    const { webhookUrl } = parseForm(goLiveForm, req.body);
    let live;
    try {
      live = await goLive(rt, a, { webhookUrl, by: principalOf(s) });
    } catch (err) {
      // The refusal as a page of its own: each failing critical item, linked to its place.
      if (err instanceof AppError && err.code === 'SVC_CHECKLIST_INCOMPLETE' && wantsHtml(req))
        return sendPage(
          res,
          409,
          goLiveRefusedPage(s, a, { message: err.message, errors: err.errors ?? [] }),
        );
      throw err;
    }
    rt.log.info(
      {
        appId: a.appId,
        liveAppId: live.app.appId,
        noticesCopied: live.noticesCopied,
        via: 'console',
      },
      'app went live',
    );
    sendPage(
      res,
      201,
      shownOncePage(s, a, {
        title: 'Live app created',
        label: 'Secret key of the live app',
        value: live.secretKey,
        extra: wentLiveExtra(s, live.app, live.noticesCopied),
      }),
    );
  });

  r.get('/apps/:appId/sandbox', ...read, async (req, res) => {
    const s = sessionOf(res);
    const a = sandboxOnly(await appOf(res, req.params.appId));
    sendPage(res, 200, sandboxPage(s, a, await sandboxView(rt, a, req)));
  });

  r.post('/apps/:appId/sandbox/webhook-url', ...write, async (req, res) => {
    const a = sandboxOnly(await appOf(res, req.params.appId));
    const { webhookUrl } = parseForm(webhookForm, req.body);
    await updateApp(rt, a.appId, { webhookUrl });
    rt.log.info({ appId: a.appId, via: 'console' }, 'app updated');
    redirect(res, `${sandboxPath(a)}?done=webhook-url#webhook`);
  });

  r.post('/apps/:appId/sandbox/test-events', ...write, async (req, res) => {
    const a = sandboxOnly(await appOf(res, req.params.appId));
    const { type, variant } = parseForm(testEventForm, req.body);
    const bad = variant === 'mis-signed';
    const answer = await sendTestEvent(rt, a, type, bad);
    rt.log.info(
      { appId: a.appId, type, badSignature: bad, status: answer.status, via: 'console' },
      'test event sent',
    );
    redirect(res, `${sandboxPath(a)}?done=test-event&kind=${variant}#test-events`);
  });

  r.post('/apps/:appId/sandbox/postbacks', ...write, async (req, res) => {
    const a = sandboxOnly(await appOf(res, req.params.appId));
    const sim = parseForm(simulatorForm, req.body);
    const answer = await simulatePostback(rt, a, sim);
    rt.log.info(
      {
        appId: a.appId,
        dispatchId: sim.dispatchId,
        applied: answer.applied,
        flag: answer.flag,
        via: 'console',
      },
      'simulated postback',
    );
    const q = new URLSearchParams({
      done: 'postback',
      dispatch: sim.dispatchId,
      postback: answer.postback.postbackId,
    });
    redirect(res, `${sandboxPath(a)}?${q.toString()}#simulator`);
  });
}
