import { AppError } from '../../errors.js';
import {
  inactivityWarningId,
  INACTIVITY_WARNING,
  type InactivityWarning,
} from './inactivity-warning.js';
import type { ConsentDeps } from './deps.js';
import { getApp } from '../apps.js';
import type { App } from '../types.js';
import { inactivityPlan, inactivityStep, lastActivityMs } from './activity.js';
import { erasedExcept } from './erasure.js';
import { erasePrincipal } from './manage.js';
import type { Actor, StoredPrincipal } from './model.js';
import type { TimerOrder } from './sweep-ports.js';

/**
 * Inactivity erasure (Rule 8 and the Third Schedule; docs/parental-and-inactivity.md), run by
 * the timers worker from `inactivity` entries of the due-index. One entry per principal at a
 * time, due when its next step is; each firing decides from the principal as it is now:
 * - the warning is not due yet (the principal was active since): the entry is put again at the
 *   new time (activity itself never writes a timer);
 * - the warning is due: the e-mail is queued (notifier), then `inactivityWarnedAt` is set and
 *   the erasure timer written in one write, conditional on no activity in between;
 * - the erasure is due: every transaction is erased through the public API's erasure path, each
 *   write conditional on the principal being untouched since the warning, so activity at any
 *   moment stops it; the events are `data.deleted` (postback 24 h) with `reason: inactivity`.
 * Every step is idempotent, so a timer fired twice does no harm.
 */

/** The erasure is the service's own doing, recorded as this actor. */
export const INACTIVITY_ACTOR: Actor = { source: 'api', credential: 'system:inactivity' };

export type InactivityOutcome = 'none' | 'rescheduled' | 'warned' | 'erased';

const ATTEMPTS = 3;

/** The principal's `inactivity` timer, due at `atMs`. */
const timerEntry = (appId: string, referenceId: string, atMs: number): TimerOrder => ({
  kind: 'inactivity',
  appId,
  referenceId,
  dueAtMs: atMs,
});

async function warn(
  rt: ConsentDeps,
  app: App,
  p: StoredPrincipal,
  eraseAt: number,
  now: Date,
): Promise<boolean> {
  const msg: InactivityWarning = {
    id: inactivityWarningId(app.appId, p.referenceId, lastActivityMs(p)),
    type: INACTIVITY_WARNING,
    appId: app.appId,
    referenceId: p.referenceId,
    eraseAt: new Date(eraseAt).toISOString(),
    inactivityDays: app.inactivityErasureDays!,
    createdAt: now.toISOString(),
  };
  // The e-mail first: should the write below fail, the retried timer queues the same id again.
  await rt.producer.send([
    { topic: rt.topics.notifications, key: app.appId, value: JSON.stringify(msg) },
  ]);
  // False: active meanwhile.
  return rt.sweeps.inactivity.markWarned(
    app.appId,
    p.referenceId,
    p,
    now.toISOString(),
    timerEntry(app.appId, p.referenceId, eraseAt),
  );
}

/** The next step for one principal (see the module comment). */
export async function fireInactivity(
  rt: ConsentDeps,
  appId: string,
  referenceId: string,
  now: Date,
): Promise<InactivityOutcome> {
  const store = rt.sweeps.inactivity;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const app = await getApp(rt, appId);
    const days = app?.inactivityErasureDays;
    // No policy (any more): nothing to do. Setting one schedules every principal again.
    if (!app || !days) return 'none';
    const p = await store.loadPrincipal(appId, referenceId);
    if (!p) return 'none';
    // Everything is erased already: a new transaction of the principal starts a new timer.
    if ((await erasedExcept(rt, appId, referenceId)) !== undefined) return 'none';
    const warnedAtMs =
      p.inactivityWarnedAt === undefined ? undefined : Date.parse(p.inactivityWarnedAt);
    const step = inactivityStep(
      { lastActiveMs: lastActivityMs(p), warnedAtMs },
      days,
      app,
      now.getTime(),
    );
    if (step.do === 'wait') {
      await store.putTimer(timerEntry(appId, referenceId, step.at));
      return 'rescheduled';
    }
    if (step.do === 'warn') {
      if (await warn(rt, app, p, step.eraseAt, now)) return 'warned';
      continue;
    }
    const guard = {
      write: {
        op: 'principal-unchanged' as const,
        referenceId,
        lastActiveAt: p.lastActiveAt,
        inactivityWarnedAt: p.inactivityWarnedAt,
      },
      conflict: 'The principal was active after the inactivity warning',
    };
    const ctx = { rt, app, actor: INACTIVITY_ACTOR, now: () => now, reason: 'inactivity' as const };
    try {
      await erasePrincipal(ctx, referenceId, guard);
      rt.log.info({ appId, referenceId, days }, 'principal erased after inactivity');
      return 'erased';
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'SVC_CONFLICT')) throw err;
      // Active since the warning: the next round finds the new activity and reschedules.
    }
  }
  throw new AppError('SVC_UNAVAILABLE', 'The principal kept changing; the timer will retry', {
    retryAfterS: 1,
  });
}

/** Timers written at once. */
const CONCURRENCY = 10;

/**
 * Schedules (`inactivity_scan`, due now) the timers of every principal of the app: after its
 * policy was set or changed, since principals created before have no timer, or one for another
 * policy.
 */
export async function scheduleInactivityScan(rt: ConsentDeps, appId: string, now = new Date()) {
  await rt.sweeps.inactivity.ensureTimers(now.getTime());
  await rt.sweeps.inactivity.putTimer({
    kind: 'inactivity_scan',
    appId,
    referenceId: '',
    dueAtMs: now.getTime(),
  });
}

/**
 * The scan: every principal of the app gets its `inactivity` timer at its next step (a scan of
 * the table, filtered to the app's principals: run once per policy change). A timer put twice is
 * the same item. Returns how many principals were scheduled.
 */
export async function scheduleAllInactivity(
  rt: ConsentDeps,
  appId: string,
  now: Date,
): Promise<number> {
  const app = await getApp(rt, appId);
  if (!app?.inactivityErasureDays) return 0;
  const days = app.inactivityErasureDays;
  let scheduled = 0;
  for await (const items of rt.sweeps.inactivity.principalPages(appId)) {
    for (let i = 0; i < items.length; i += CONCURRENCY) {
      await Promise.all(
        items.slice(i, i + CONCURRENCY).map(async (p) => {
          // A standing warning is kept: its erasure timer was written with it. Otherwise the
          // timer is due when the warning would be, never before now.
          const at = p.inactivityWarnedAt
            ? now.getTime()
            : Math.max(inactivityPlan(lastActivityMs(p), days, app).warnAt, now.getTime());
          await rt.sweeps.inactivity.putTimer(timerEntry(appId, p.referenceId, at));
        }),
      );
    }
    scheduled += items.length;
  }
  return scheduled;
}
