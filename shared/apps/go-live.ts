import { z } from 'zod';
import { AppError } from '../errors.js';
import type { BaseConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { createApp, recordGoLive, type AppsDeps } from '../domain/apps.js';
import {
  attestability,
  evaluateChecklist,
  failingCritical,
  type Attestation,
  type Checklist,
  type ChecklistItem,
} from '../domain/checklist.js';
import {
  claimGoLive,
  completeGoLive,
  loadChecklistSnapshot,
  recordAttestation,
  releaseGoLive,
  type ChecklistLoadDeps,
} from './checklist.js';
import { createNotice, listNotices } from '../domain/notices.js';
import type { App } from '../domain/types.js';

/**
 * The checklist's changes (docs/api.md, Compliance checklist and go-live): attesting an item
 * only a person can confirm, and taking a sandbox app live. The admin API and the console both
 * call these, so both apply the same rules; shared/domain/checklist.ts holds the rules and
 * shared/apps/checklist.ts loads what they are evaluated from.
 */

/**
 * What attesting and going live use: what the checklist is loaded from, the app store (the
 * live twin and the go-live on both apps), and the log; a Runtime is one.
 */
export interface GoLiveDeps extends ChecklistLoadDeps, AppsDeps {
  config: BaseConfig;
  log: Logger;
}

/** Who attests (or goes live) and what they confirm. */
export const attestInput = z.strictObject({
  by: z.string().trim().min(1).max(200),
  note: z.string().trim().min(1).max(2000),
});

export interface GoLiveInput {
  /** The live app's webhook URL: https. */
  webhookUrl: string;
  /** The live app's allowlist; the sandbox app's when absent. */
  allowedOrigins?: string[] | undefined;
  /** Who takes the app live (kept on both apps). */
  by: string;
}

function isHttpsUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return u.protocol === 'https:' && !u.username && !u.password;
  } catch {
    return false;
  }
}

/** The app's checklist now. */
export async function checklistOf(rt: ChecklistLoadDeps, app: App): Promise<Checklist> {
  return evaluateChecklist(await loadChecklistSnapshot(rt, app), Date.now());
}

/** The refusal of a go-live: each failing critical item, by id, with why. */
function incomplete(c: Checklist): AppError {
  const failing = failingCritical(c);
  return new AppError(
    'SVC_CHECKLIST_INCOMPLETE',
    `${failing.length} critical checklist item(s) are not satisfied: ${failing.map((i) => i.id).join(', ')}`,
    {
      errors: failing.map((i) => ({
        path: `/checklist/${i.id}`,
        message: `${i.status}: ${i.title}. ${i.evidence}`,
      })),
    },
  );
}

/**
 * Creates the live twin: its own app id, site key and `svc_sk_` secret, no API keys, no time
 * compression, the sandbox app's notices (their latest versions) copied.
 */
async function createLiveTwin(
  rt: GoLiveDeps,
  sandbox: App,
  body: GoLiveInput,
): Promise<{ app: App; secretKey: string; noticesCopied: number }> {
  const { app, secretKey } = await createApp(rt, {
    name: sandbox.name,
    environment: 'live',
    webhookUrl: body.webhookUrl,
    allowedOrigins: body.allowedOrigins ?? sandbox.allowedOrigins,
    contactEmail: sandbox.contactEmail,
    portalUrlTemplate: sandbox.portalUrlTemplate,
    ledgerRetentionDays: sandbox.ledgerRetentionDays,
  });
  const notices = await listNotices(rt, sandbox.appId);
  for (const n of notices) {
    const {
      appId: _appId,
      noticeId: _noticeId,
      version: _version,
      textHash: _textHash,
      createdAt: _createdAt,
      ...input
    } = n;
    await createNotice(rt, app.appId, input);
  }
  return { app, secretKey, noticesCopied: notices.length };
}

/**
 * Records an attestation of an item only a person can confirm, and answers it with the item as
 * it now evaluates. An unknown item is 404; an observed one 409.
 */
export async function attestItem(
  rt: ChecklistLoadDeps,
  app: App,
  itemId: string,
  a: z.infer<typeof attestInput>,
): Promise<{ attestation: Attestation; item: ChecklistItem | undefined }> {
  const kind = attestability(itemId);
  if (kind === 'unknown') throw new AppError('SVC_NOT_FOUND', 'Unknown checklist item');
  if (kind === 'observed')
    throw new AppError(
      'SVC_CONFLICT',
      `The item ${itemId} is decided from what the service observes; it cannot be attested`,
    );
  const attestation = await recordAttestation(rt, app.appId, itemId, a);
  const item = (await checklistOf(rt, app)).areas
    .flatMap((x) => x.items)
    .find((i) => i.id === itemId);
  return { attestation, item };
}

export interface WentLive {
  app: App;
  secretKey: string;
  sandboxAppId: string;
  noticesCopied: number;
}

/**
 * Takes a sandbox app live: refused (409) for a live app, an app that went live already, or
 * while a critical item is not satisfied (SVC_CHECKLIST_INCOMPLETE naming each); otherwise
 * creates the live twin once (a claim item guards against a concurrent go-live) and records who
 * and when on both apps. The live app's secret key is only in the answer.
 */
export async function goLive(rt: GoLiveDeps, sandbox: App, body: GoLiveInput): Promise<WentLive> {
  const appId = sandbox.appId;
  if (sandbox.environment !== 'sandbox')
    throw new AppError('SVC_CONFLICT', 'Only a sandbox app goes live; this app is live');
  if (sandbox.goLiveAt)
    throw new AppError('SVC_CONFLICT', `This app went live at ${sandbox.goLiveAt}`);
  if (!isHttpsUrl(body.webhookUrl))
    throw new AppError('SVC_VALIDATION_FAILED', 'The body is not valid', {
      errors: [{ path: '/webhookUrl', message: 'must be an https URL for a live app' }],
    });
  const checklist = await checklistOf(rt, sandbox);
  if (!checklist.canGoLive) throw incomplete(checklist);
  const at = new Date().toISOString();
  const by = body.by;
  if (!(await claimGoLive(rt, appId, { by, at })))
    throw new AppError('SVC_CONFLICT', 'This app went live already (or is going live now)');
  const twin = await createLiveTwin(rt, sandbox, body).catch(async (err: unknown) => {
    await releaseGoLive(rt, appId).catch((e: unknown) =>
      rt.log.error({ err: e, appId }, 'go-live claim not released'),
    );
    throw err;
  });
  const liveAppId = twin.app.appId;
  await completeGoLive(rt, appId, { by, at, liveAppId });
  const live = await recordGoLive(rt, liveAppId, { at, by, twin: { sandboxAppId: appId } });
  await recordGoLive(rt, appId, { at, by, twin: { liveAppId } });
  return {
    app: live,
    secretKey: twin.secretKey,
    sandboxAppId: appId,
    noticesCopied: twin.noticesCopied,
  };
}
