import { PutCommand, ScanCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { AppError } from '../../errors.js';
import {
  inactivityWarningId,
  INACTIVITY_WARNING,
  type InactivityWarning,
} from '../../mail/inactivity.js';
import type { Runtime } from '../../runtime.js';
import { cancellationReasons } from '../../storage/dynamo.js';
import { duePutItem, ensureFamily } from '../../storage/timers/due.js';
import { getApp } from '../apps.js';
import type { App } from '../types.js';
import { inactivityStep, lastActivityMs } from './activity.js';
import { erasedExcept } from './erasure.js';
import { erasePrincipal } from './manage.js';
import type { Actor, StoredPrincipal } from './model.js';
import { keys, loadPrincipal } from '../../storage/consents/repository.js';
import { expiryEntry, inactivityTimerItem } from './timers.js';

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

type Seen = Pick<StoredPrincipal, 'lastActiveAt' | 'inactivityWarnedAt'>;

/** The condition that the principal's activity fields are still those read (`seen`). */
function unchanged(p: Seen) {
  const values: Record<string, string> = {};
  const parts = ['attribute_exists(pk)'];
  if (p.lastActiveAt === undefined) parts.push('attribute_not_exists(lastActiveAt)');
  else {
    parts.push('lastActiveAt = :seenActive');
    values[':seenActive'] = p.lastActiveAt;
  }
  if (p.inactivityWarnedAt === undefined) parts.push('attribute_not_exists(inactivityWarnedAt)');
  else {
    parts.push('inactivityWarnedAt = :seenWarned');
    values[':seenWarned'] = p.inactivityWarnedAt;
  }
  return { ConditionExpression: parts.join(' AND '), values };
}

const timerPut = (rt: Runtime, appId: string, referenceId: string, atMs: number) =>
  duePutItem(rt, expiryEntry('inactivity', { appId, referenceId }, atMs, rt.config.TIMER_SHARDS));

async function warn(
  rt: Runtime,
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
  const cond = unchanged(p);
  try {
    await rt.dynamo.doc.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName: rt.tables.entities,
              Key: keys.principal(app.appId, p.referenceId),
              UpdateExpression: 'SET inactivityWarnedAt = :now',
              ConditionExpression: cond.ConditionExpression,
              ExpressionAttributeValues: { ...cond.values, ':now': now.toISOString() },
            },
          },
          timerPut(rt, app.appId, p.referenceId, eraseAt),
        ],
      }),
    );
    return true;
  } catch (err) {
    if (cancellationReasons(err)?.failed.has(0)) return false; // active meanwhile
    throw err;
  }
}

/** The next step for one principal (see the module comment). */
export async function fireInactivity(
  rt: Runtime,
  appId: string,
  referenceId: string,
  now: Date,
): Promise<InactivityOutcome> {
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    const app = await getApp(rt, appId);
    const days = app?.inactivityErasureDays;
    // No policy (any more): nothing to do. Setting one schedules every principal again.
    if (!app || !days) return 'none';
    const p = await loadPrincipal(rt, appId, referenceId);
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
      await rt.dynamo.doc.send(new PutCommand(timerPut(rt, appId, referenceId, step.at).Put!));
      return 'rescheduled';
    }
    if (step.do === 'warn') {
      if (await warn(rt, app, p, step.eraseAt, now)) return 'warned';
      continue;
    }
    const cond = unchanged(p);
    const guard = {
      item: {
        ConditionCheck: {
          TableName: rt.tables.entities,
          Key: keys.principal(appId, referenceId),
          ConditionExpression: cond.ConditionExpression,
          ExpressionAttributeValues: cond.values,
        },
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

/** Principals read per scan page, and timers written at once. */
const SCAN_PAGE = 500;
const CONCURRENCY = 10;

/**
 * Schedules (`inactivity_scan`, due now) the timers of every principal of the app: after its
 * policy was set or changed, since principals created before have no timer, or one for another
 * policy.
 */
export async function scheduleInactivityScan(rt: Runtime, appId: string, now = new Date()) {
  await ensureFamily(rt, 'expiry', rt.config.TIMER_SHARDS, now.getTime());
  const e = expiryEntry(
    'inactivity_scan',
    { appId, referenceId: '' },
    now.getTime(),
    rt.config.TIMER_SHARDS,
  );
  await rt.dynamo.doc.send(new PutCommand(duePutItem(rt, e).Put!));
}

/**
 * The scan: every principal of the app gets its `inactivity` timer at its next step (a scan of
 * the table, filtered to the app's principals: run once per policy change). A timer put twice is
 * the same item. Returns how many principals were scheduled.
 */
export async function scheduleAllInactivity(
  rt: Runtime,
  appId: string,
  now: Date,
): Promise<number> {
  const app = await getApp(rt, appId);
  if (!app?.inactivityErasureDays) return 0;
  let start: Record<string, unknown> | undefined;
  let scheduled = 0;
  do {
    const page = await rt.dynamo.doc.send(
      new ScanCommand({
        TableName: rt.tables.entities,
        // Claims at a principal's key are no principals (repository.ts, `putClaim`).
        FilterExpression: 'sk = :sk AND appId = :app AND attribute_not_exists(claimOf)',
        ExpressionAttributeValues: { ':sk': 'PRINCIPAL', ':app': appId },
        ProjectionExpression:
          'appId, referenceId, lastActiveAt, inactivityWarnedAt, createdAt, updatedAt',
        Limit: SCAN_PAGE,
        ExclusiveStartKey: start,
      }),
    );
    const items = (page.Items ?? []) as StoredPrincipal[];
    for (let i = 0; i < items.length; i += CONCURRENCY) {
      await Promise.all(
        items.slice(i, i + CONCURRENCY).map(async (p) => {
          // A standing warning is kept: its erasure timer was written with it.
          const put = p.inactivityWarnedAt
            ? timerPut(rt, appId, p.referenceId, now.getTime())
            : inactivityTimerItem(rt, app, p, lastActivityMs(p), now.getTime());
          if (put?.Put) await rt.dynamo.doc.send(new PutCommand(put.Put));
        }),
      );
    }
    scheduled += items.length;
    start = page.LastEvaluatedKey;
  } while (start);
  return scheduled;
}
