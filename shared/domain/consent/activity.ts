import type { ConsentDeps } from './deps.js';
import type { App } from '../types.js';
import type { StoredPrincipal } from './model.js';

/**
 * A principal's last activity and the instants of the inactivity policy (docs/parental-and-
 * inactivity.md). Activity is any capture, change or read of the principal's consent through
 * the APIs, the dashboard or the portal. It is kept on the principal item as `lastActiveAt`,
 * moved only when the stored value is more than a day old (a day divided by a sandbox app's
 * time scale) or when an inactivity warning stands, so reads do not cost a write each.
 */

export const DAY_MS = 86_400_000;
/** Smallest and largest `inactivityErasureDays` an app may set. */
export const MIN_INACTIVITY_DAYS = 7;
export const MAX_INACTIVITY_DAYS = 3650;
/**
 * How long before the erasure the warning is queued: three days, so that even a delayed
 * e-mail arrives at least 48 hours before the erasure. The erasure never comes sooner than
 * this after the warning, whenever the warning went out.
 */
export const WARNING_LEAD_MS = 3 * DAY_MS;

type Scaled = Pick<App, 'slaTimeScale'>;
const scaleOf = (app: Scaled) => Math.max(1, app.slaTimeScale || 1);

/** The resolution of `lastActiveAt`: a day, compressed for sandbox apps. */
export const activityResolutionMs = (app: Scaled) => DAY_MS / scaleOf(app);

/** The principal's last activity: `lastActiveAt`, or for older items their last update. */
export function lastActivityMs(
  p: Pick<StoredPrincipal, 'lastActiveAt' | 'createdAt' | 'updatedAt'>,
): number {
  return Date.parse(p.lastActiveAt ?? p.updatedAt ?? p.createdAt);
}

/**
 * When the warning is due and when the erasure would be, from the last recorded activity.
 * The window is one day longer than the policy because activity is recorded to the day, so the
 * person has always been inactive for the whole policy when the erasure comes.
 */
export function inactivityPlan(
  lastActiveMs: number,
  days: number,
  app: Scaled,
): { warnAt: number; eraseAt: number } {
  const scale = scaleOf(app);
  const eraseAt = Math.ceil(lastActiveMs + ((days + 1) * DAY_MS) / scale);
  return { warnAt: Math.ceil(eraseAt - WARNING_LEAD_MS / scale), eraseAt };
}

export type InactivityStep =
  /** Nothing due yet: fire again at `at`. */
  | { do: 'wait'; at: number }
  /** Queue the warning now; the erasure follows at `eraseAt`. */
  | { do: 'warn'; eraseAt: number }
  | { do: 'erase' };

/**
 * What an inactivity timer does now (pure). A warning stands only when it was queued after the
 * last activity (activity removes it anyway); the erasure comes `WARNING_LEAD_MS` (compressed)
 * after the warning, never sooner.
 */
export function inactivityStep(
  p: { lastActiveMs: number; warnedAtMs?: number | undefined },
  days: number,
  app: Scaled,
  nowMs: number,
): InactivityStep {
  const lead = Math.ceil(WARNING_LEAD_MS / scaleOf(app));
  if (p.warnedAtMs !== undefined && p.warnedAtMs >= p.lastActiveMs) {
    const eraseAt = p.warnedAtMs + lead;
    return nowMs >= eraseAt ? { do: 'erase' } : { do: 'wait', at: eraseAt };
  }
  const { warnAt } = inactivityPlan(p.lastActiveMs, days, app);
  return nowMs >= warnAt ? { do: 'warn', eraseAt: nowMs + lead } : { do: 'wait', at: warnAt };
}

/** Per runtime: the last activity known to be stored, by app and principal. */
const MAX_MEMO = 50_000;
const memos = new WeakMap<ConsentDeps, Map<string, number>>();

function remember(rt: ConsentDeps, key: string, ms: number) {
  let memo = memos.get(rt);
  if (!memo) memos.set(rt, (memo = new Map<string, number>()));
  memo.delete(key);
  memo.set(key, ms);
  if (memo.size > MAX_MEMO) {
    const oldest = memo.keys().next().value;
    if (oldest !== undefined) memo.delete(oldest);
  }
}

/**
 * Records activity of a principal at `nowMs`. Costs nothing while this process knows the stored
 * value is less than a day old; otherwise one read, and a write only when the stored value is a
 * day old or a warning stands. That a warning stands can be skipped over this way only if it
 * was queued within a day of the stored activity, which the policy never does (the warning
 * comes at least four days after it, as `MIN_INACTIVITY_DAYS` is 7).
 */
export async function recordActivity(
  rt: ConsentDeps,
  app: Pick<App, 'appId' | 'slaTimeScale'>,
  referenceId: string,
  nowMs = Date.now(),
): Promise<'recorded' | 'recent' | 'unknown'> {
  const res = activityResolutionMs(app);
  const memoKey = `${app.appId} ${referenceId}`;
  const known = memos.get(rt)?.get(memoKey);
  if (known !== undefined && nowMs - known < res) return 'recent';
  const store = rt.sweeps.activity;
  const p = await store.readActivity(app.appId, referenceId);
  if (!p) return 'unknown';
  const last = lastActivityMs(p);
  if (p.inactivityWarnedAt === undefined && nowMs - last < res) {
    remember(rt, memoKey, last);
    return 'recent';
  }
  // Another request may record it first (or the principal be gone): nothing left to do then.
  await store.touchActivity(
    app.appId,
    referenceId,
    new Date(nowMs).toISOString(),
    new Date(nowMs - res).toISOString(),
  );
  remember(rt, memoKey, nowMs);
  return 'recorded';
}

/**
 * `recordActivity` without holding up the caller: a failure is logged, never answered. The
 * request it belongs to has already done its work.
 */
export function noteActivity(
  rt: ConsentDeps,
  app: Pick<App, 'appId' | 'slaTimeScale'>,
  referenceId: string,
): void {
  recordActivity(rt, app, referenceId).catch((err: unknown) =>
    rt.log.warn({ err, appId: app.appId }, 'principal activity not recorded'),
  );
}
