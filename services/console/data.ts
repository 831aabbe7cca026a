import { listApiKeys } from '../../shared/domain/apiKeys.js';
import { getApp, getAppSecretKey, type AppSummary } from '../../shared/domain/apps.js';
import { listNotices } from '../../shared/domain/notices.js';
import type { ApiKey, App } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import type { Dispatch } from '../../shared/storage/ledger/dispatches.js';
import { getDispatch, listDispatchesByApp } from '../../shared/ledger/queries.js';
import type { Runtime } from '../../shared/runtime.js';
import {
  getEndpointState,
  isDisabled,
  type EndpointState,
} from '../../shared/storage/webhooks/endpoints.js';
import type { Session } from './session.js';

/**
 * What the console shows, read through the domain's own functions (apps, API keys, notices,
 * endpoint health, the ledger), as the admin API does. Nothing here writes.
 */

/** The app, when this session may see it; otherwise 404, exactly like an unknown app. */
export async function appFor(rt: Runtime, s: Session, appId: string): Promise<App> {
  const app = s.kind === 'admin' || s.appId === appId ? await getApp(rt, appId) : undefined;
  if (!app) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  return app;
}

export type AppRow = AppSummary;

/**
 * Every app, for the operator, by name: a page of up to `want` from the store's listing, with a
 * cursor for the rest (the store reads a bounded amount per page).
 */
export async function listApps(
  rt: Runtime,
  cursor?: string,
  want = 100,
): Promise<{ apps: AppRow[]; next: string | null }> {
  const { apps, next } = await rt.apps.page(cursor, want);
  apps.sort((a, b) => a.name.localeCompare(b.name) || a.appId.localeCompare(b.appId));
  return { apps, next };
}

/** `svc_sk_test_…Ab3d`: the kind of key and its last 4 characters, never more. */
export function maskSecret(secret: string): string {
  const prefix = /^svc_sk_(test_)?/.exec(secret)?.[0] ?? '';
  return `${prefix}…${secret.slice(-4)}`;
}

export interface NoticeRow {
  noticeId: string;
  triggerKey: string;
  version: number;
  kind: string;
  languages: string[];
  regions: string[] | undefined;
  createdAt: string;
}

export interface EndpointHealth {
  url: string;
  state: EndpointState | undefined;
  disabled: boolean;
  /** Delivered among the recent dispatches that had an attempt. */
  delivered: number;
  attempted: number;
  lastError: { at: string; dispatchId: string; what: string } | undefined;
}

export interface AppPage {
  app: App;
  maskedSecret: string;
  keys: ApiKey[];
  notices: NoticeRow[];
  health: EndpointHealth;
  dispatches: Dispatch[];
}

/** How many recent dispatches the page lists; the success rate is over RATE_WINDOW. */
export const RECENT = 20;
const RATE_WINDOW = 50;

function describeFailure(a: {
  errorClass?: string;
  statusCode?: number;
  errorMessage?: string;
}): string {
  return [
    a.errorClass,
    a.statusCode === undefined ? undefined : `HTTP ${a.statusCode}`,
    a.errorMessage,
  ]
    .filter((x) => x !== undefined && x !== '')
    .join(' · ');
}

/**
 * Endpoint health as the dispatcher keeps it (last success, failing since, disabled and why:
 * shared/storage/webhooks/endpoints.ts), with the success rate and last error of the recent dispatches
 * from the ledger.
 */
async function endpointHealth(rt: Runtime, app: App, recent: Dispatch[]): Promise<EndpointHealth> {
  const state = await getEndpointState(rt, app.appId);
  const attempted = recent.filter((d) => d.attemptCount > 0);
  const delivered = attempted.filter((d) => d.deliveryStatus === 'delivered').length;
  let lastError: EndpointHealth['lastError'];
  const failing = attempted
    .filter((d) => d.deliveryStatus !== 'delivered' && d.lastAttemptAt)
    .sort((a, b) => String(b.lastAttemptAt).localeCompare(String(a.lastAttemptAt)))[0];
  if (failing) {
    const full = await getDispatch(rt, failing.dispatchId);
    const last = full?.attempts.filter((a) => a.outcome === 'failed').at(-1);
    if (last)
      lastError = { at: last.time, dispatchId: failing.dispatchId, what: describeFailure(last) };
  }
  return {
    url: app.webhookUrl,
    state,
    disabled: isDisabled(state, app.webhookUrl),
    delivered,
    attempted: attempted.length,
    lastError,
  };
}

export async function appPage(rt: Runtime, app: App): Promise<AppPage> {
  const [secret, keys, notices, recent] = await Promise.all([
    getAppSecretKey(rt, app),
    listApiKeys(rt, app.appId),
    listNotices(rt, app.appId),
    listDispatchesByApp(rt, app.appId, { order: 'desc', limit: RATE_WINDOW }),
  ]);
  return {
    app,
    maskedSecret: maskSecret(secret),
    keys,
    notices: notices.map((n) => ({
      noticeId: n.noticeId,
      triggerKey: n.triggerKey,
      version: n.version,
      kind: n.kind,
      languages: Object.keys(n.translations),
      // Regions are optional on a notice (absent: everywhere).
      regions: (n as { regions?: string[] }).regions,
      createdAt: n.createdAt,
    })),
    health: await endpointHealth(rt, app, recent.items),
    dispatches: recent.items.slice(0, RECENT),
  };
}
