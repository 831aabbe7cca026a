import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { acceptPostback, type AcceptDeps } from '../compliance/accept.js';
import { findDispatch } from '../compliance/dispatch.js';
import type { BaseConfig } from '../config.js';
import { POSTBACK_RISKS, POSTBACK_STATUSES } from '../domain/compliance/flags.js';
import { postbackBody } from '../domain/compliance/postback.js';
import { AppError } from '../errors.js';
import { parseBody } from '../http/validate.js';
import type { WithLedger } from '../ledger/port.js';
import { getDispatch } from '../ledger/queries.js';
import { WebhookClient } from '../webhooks/client.js';
import { policyFor, type GuardConfig } from '../webhooks/guard.js';
import { parseCidrList } from '../net/ip.js';
import { webhookHeaders } from '../webhooks/signer.js';
import { getAppSecretKey, type AppsDeps } from '../domain/apps.js';
import { EVENT_TYPES, type ConsentEvent, type PurposeState } from '../domain/consent/events.js';
import {
  newDispatchId,
  newEventId,
  newReferenceId,
  newSecretKey,
  patterns,
} from '../domain/ids.js';
import { recordTestEvent, type ChecklistDeps } from '../domain/observations.js';
import type { App } from '../domain/types.js';

/**
 * The sandbox tools' actions (docs/api.md, Sandbox tools), for sandbox apps only: a test event
 * signed (or deliberately mis-signed) by the dispatcher's signing code and sent through its HTTP
 * client and SSRF guard, and the postback simulator, which goes through the postback API's own
 * code. The admin API and the console both call these.
 */

/**
 * What a test event uses: the app store (the app's secret key), the checklist's store (its
 * outcome), and the webhook settings; a Runtime is one.
 */
export interface TestEventDeps extends AppsDeps, ChecklistDeps {
  config: BaseConfig;
}

/**
 * What the postback simulator uses: the postback API's (`AcceptDeps`), the ledger's readers,
 * and the request deadline; a Runtime is one.
 */
export interface SimulatePostbackDeps extends AcceptDeps, WithLedger {
  config: AcceptDeps['config'] & Pick<BaseConfig, 'HTTP_DEADLINE_MS'>;
}

/** How long the simulator waits for the compliance worker to apply its postback, at most. */
const FLAG_WAIT_MAX_MS = 2_000;
export const testEventBody = z.strictObject({
  type: z.enum(EVENT_TYPES),
  /** Sign with a wrong key: the endpoint should refuse it (non-2xx). */
  badSignature: z.boolean().default(false),
});

export const simulatePostbackBody = z.strictObject({
  dispatchId: z.string().regex(patterns.dispatchId, 'must be dsp_ followed by a ULID'),
  status: z.enum(POSTBACK_STATUSES),
  risk: z.enum(POSTBACK_RISKS),
  remark: z.string().max(2000).optional(),
});

/** The app, when it is a sandbox app; a live app is 409. */
export function sandboxOnly(app: App): App {
  if (app.environment !== 'sandbox')
    throw new AppError('SVC_CONFLICT', 'Sandbox tools are for sandbox apps only');
  return app;
}

/** The test purpose's state after an event of each type. */
const TEST_STATE: Record<ConsentEvent['type'], PurposeState> = {
  'consent.created': 'granted',
  'consent.granted': 'granted',
  'consent.withdrawn': 'withdrawn',
  'consent.expiry.reminder': 'granted',
  'consent.expired': 'expired',
  'data.deleted': 'erased',
  'consent.parental_verification_required': 'pending',
};

/**
 * A well-formed event of the type for the app; it belongs to no principal and needs no
 * postback. Its consent is a new one each time, so it is that consent's first event.
 */
function testEvent(app: App, type: ConsentEvent['type'], now: Date): ConsentEvent {
  return {
    id: newEventId(),
    type,
    apiVersion: 'v1',
    createdAt: now.toISOString(),
    appId: app.appId,
    environment: app.environment,
    data: {
      referenceId: newReferenceId(),
      userId: null,
      consentId: randomUUID(),
      sequence: 1,
      recordIds: [randomUUID()],
      purposes: { test: type === 'consent.granted' || type === 'consent.created' },
      state: { test: TEST_STATE[type] },
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
    },
  };
}

function guardConfig(rt: {
  config: Pick<BaseConfig, 'WEBHOOK_ALLOWLIST' | 'WEBHOOK_ALLOW_LOOPBACK_SANDBOX'>;
}): GuardConfig {
  try {
    return {
      allowlist: parseCidrList(rt.config.WEBHOOK_ALLOWLIST),
      allowLoopbackSandbox: rt.config.WEBHOOK_ALLOW_LOOPBACK_SANDBOX,
    };
  } catch {
    throw new AppError('SVC_UNAVAILABLE', 'WEBHOOK_ALLOWLIST is not valid');
  }
}

/**
 * Sends one test event now and keeps its outcome. The receiver gets the request deadline less a
 * margin (at most WEBHOOK_TIMEOUT_MS) to answer, since the caller waits for it.
 */
export async function sendTestEvent(
  rt: TestEventDeps,
  app: App,
  type: ConsentEvent['type'],
  bad: boolean,
) {
  const now = new Date();
  const event = testEvent(app, type, now);
  const body = JSON.stringify(event);
  const webhookId = newDispatchId();
  const secretKey = bad ? newSecretKey(true) : await getAppSecretKey(rt, app);
  const headers = {
    ...webhookHeaders({
      dispatchId: webhookId,
      eventType: type,
      attempt: 1,
      timestampS: Math.floor(now.getTime() / 1000),
      body,
      secretKey,
    }),
    'x-svc-test-event': 'true',
  };
  const timeoutMs = Math.max(
    500,
    Math.min(rt.config.WEBHOOK_TIMEOUT_MS, rt.config.HTTP_DEADLINE_MS - 500),
  );
  // A client of its own, closed at once: test events are rare and hold no pooled sockets.
  const client = new WebhookClient({ maxSocketsPerDestination: 1 });
  const r = await client
    .post({
      url: app.webhookUrl,
      headers,
      body,
      policy: policyFor(app.environment, guardConfig(rt)),
      timeoutMs,
    })
    .finally(() => client.close());
  await recordTestEvent(rt, app.appId, bad ? 'bad_signature' : 'signed', {
    at: now.toISOString(),
    url: app.webhookUrl,
    type,
    status: r.statusCode ?? null,
    errorClass: r.errorClass,
    durationMs: r.durationMs,
  });
  return {
    status: r.statusCode ?? null,
    ok: r.ok,
    durationMs: r.durationMs,
    signatureValid: !bad,
    webhookId,
    eventId: event.id,
    ...(r.ok ? {} : { error: r.errorMessage ?? r.errorClass ?? 'failed' }),
  };
}

/** Polls the ledger until the compliance worker recorded the postback, for a little while. */
async function flagOnceApplied(rt: SimulatePostbackDeps, dispatchId: string, postbackId: string) {
  const until = Date.now() + Math.min(FLAG_WAIT_MAX_MS, rt.config.HTTP_DEADLINE_MS / 2);
  for (;;) {
    const d = await getDispatch(rt, dispatchId);
    if (d?.postbacks.some((p) => p.postbackId === postbackId))
      return { applied: true, flag: d.complianceFlag };
    if (Date.now() >= until) return { applied: false, flag: d?.complianceFlag ?? null };
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * Posts back for one of the sandbox app's dispatches through the postback API's own checks and
 * write, then waits a little for the compliance worker to apply it: `flag` is the dispatch's
 * flag after it when `applied`, else the flag before it.
 */
export async function simulatePostback(
  rt: SimulatePostbackDeps,
  app: App,
  sim: z.infer<typeof simulatePostbackBody>,
) {
  const dispatch = await findDispatch(rt, sim.dispatchId);
  if (!dispatch || dispatch.appId !== app.appId)
    throw new AppError('SVC_NOT_FOUND', 'No such dispatch');
  const receivedAt = new Date();
  // The postback API's own body rules (a failed status needs a remark), then its own path.
  const body = parseBody(postbackBody, {
    dispatchId: dispatch.dispatchId,
    referenceId: dispatch.referenceId,
    status: sim.status,
    risk: sim.risk,
    completedAt: receivedAt.toISOString(),
    tags: ['sandbox_simulator'],
    actions: [],
    ...(sim.remark !== undefined ? { remark: sim.remark } : {}),
  });
  const receipt = await acceptPostback(rt, app, body, receivedAt);
  const { applied, flag } = await flagOnceApplied(rt, dispatch.dispatchId, receipt.postbackId);
  return {
    postback: { ...receipt, status: sim.status, risk: sim.risk, remark: sim.remark ?? null },
    applied,
    flag,
  };
}
