import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { ulid } from 'ulid';
import { dutyDeadlines, type DutyFacts } from '../../domain/duties/clock.js';
import { listPage, withoutKeys } from '../duties/list.js';
import { notificationItem } from '../duties/notifications.js';
import {
  checkDuty,
  closeDuty,
  dutyMetrics,
  loadDutyItem,
  openDuty,
  type DutyDeps,
  type DutyEntry,
  type DutyRecord,
  type FlagChange,
} from '../duties/store.js';
import { invalidateCache } from '../../domain/cache.js';
import { loadPrincipal, loadUser } from '../consents/repository.js';
import type { App } from '../../domain/types.js';
import { AppError } from '../../errors.js';
import { isConditionFailure } from '../dynamo.js';
import {
  DAY_MS,
  MAX_GRIEVANCE_DAYS,
  grievanceIdPattern,
  type Grievance,
  type GrievanceChannel,
  type GrievanceListQuery,
} from '../../domain/duties/grievances.js';

/** What grievances use; a Runtime is one. */
export type GrievanceDeps = DutyDeps &
  Parameters<typeof loadPrincipal>[0] &
  Parameters<typeof loadUser>[0];

/**
 * Grievances in `entities`:
 * - grievance  pk APP#{appId}#GRV#{id}  sk GRV
 *              gsi1 APP#{appId}#GRVS / {createdAt}#{id}           (the app's, by time)
 *              gsi2 APP#{appId}#REF#{ref}#GRVS / {createdAt}#{id} (one principal's)
 * Every key starts with the app id, so no lookup reaches another app's grievances. Filing and
 * answering are each one commit: the grievance, its deadline timer, the gauge counters and the
 * principal's e-mail.
 */

const keys = {
  item: (appId: string, id: string) => ({ pk: `APP#${appId}#GRV#${id}`, sk: 'GRV' }),
  byApp: (appId: string) => `APP#${appId}#GRVS`,
  byPrincipal: (appId: string, ref: string) => `APP#${appId}#REF#${ref}#GRVS`,
};

type Stored = Grievance & { version: number };

/** The app's response window in days: its own setting, else the legal maximum. */
export const responseDaysOf = (app: Pick<App, 'grievanceResponseDays'>) =>
  app.grievanceResponseDays ?? MAX_GRIEVANCE_DAYS;

/**
 * Sets the app's response window. Longer than the Rules allow is refused (400), so a
 * misconfiguration is never silently capped.
 */
export async function setResponseDays(
  rt: GrievanceDeps,
  appId: string,
  days: number,
): Promise<void> {
  if (days > MAX_GRIEVANCE_DAYS)
    throw new AppError(
      'SVC_LEGAL_LIMIT',
      `Grievances must be answered within ${MAX_GRIEVANCE_DAYS} days at most (DPDP Rules, Rule 14)`,
      { errors: [{ path: '/responseDays', message: `must be at most ${MAX_GRIEVANCE_DAYS}` }] },
    );
  try {
    await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: { pk: `APP#${appId}`, sk: 'APP' },
        UpdateExpression: 'SET #days = :d, #updatedAt = :now',
        ConditionExpression: 'attribute_exists(pk)',
        ExpressionAttributeNames: { '#days': 'grievanceResponseDays', '#updatedAt': 'updatedAt' },
        ExpressionAttributeValues: { ':d': days, ':now': new Date().toISOString() },
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
    throw err;
  } finally {
    invalidateCache();
  }
}

const factsOf = (g: Pick<Grievance, 'dueAt' | 'atRiskAt' | 'answeredAt'>): DutyFacts => ({
  dueAt: Date.parse(g.dueAt),
  atRiskAt: Date.parse(g.atRiskAt),
  doneAt: g.answeredAt === null ? undefined : Date.parse(g.answeredAt),
});

export const newGrievanceId = () => `grv_${ulid()}`;

/** The principal the app names, by referenceId or by its own userId; 404 when not the app's. */
export async function resolvePrincipal(
  rt: GrievanceDeps,
  appId: string,
  who: { referenceId?: string | undefined; userId?: string | undefined },
): Promise<{ referenceId: string; userId: string | null }> {
  if (who.userId !== undefined) {
    const user = await loadUser(rt, appId, who.userId);
    if (!user) throw new AppError('SVC_NOT_FOUND', 'No principal with this userId');
    return { referenceId: user.referenceId, userId: who.userId };
  }
  const principal = who.referenceId ? await loadPrincipal(rt, appId, who.referenceId) : undefined;
  if (!principal) throw new AppError('SVC_NOT_FOUND', 'Unknown referenceId');
  return { referenceId: who.referenceId!, userId: principal.userId ?? null };
}

export async function fileGrievance(
  rt: GrievanceDeps,
  app: App,
  input: { referenceId: string; subject: string; description: string; via: GrievanceChannel },
  now = new Date(),
): Promise<Grievance> {
  const nowMs = now.getTime();
  const days = responseDaysOf(app);
  const dl = dutyDeadlines(nowMs, days * DAY_MS, app.slaTimeScale);
  const id = newGrievanceId();
  const createdAt = now.toISOString();
  const base = {
    grievanceId: id,
    appId: app.appId,
    referenceId: input.referenceId,
    subject: input.subject,
    description: input.description,
    filedVia: input.via,
    status: 'open' as const,
    createdAt,
    dueAt: new Date(dl.dueAt).toISOString(),
    atRiskAt: new Date(dl.atRiskAt).toISOString(),
    responseDays: days,
    answer: null,
    resolution: null,
    answeredAt: null,
  };
  const initial = await openDuty(
    rt,
    { kind: 'grievance', appId: app.appId, id, deadlines: dl, nowMs },
    (start) => ({
      ...base,
      ...start,
      ...keys.item(app.appId, id),
      gsi1pk: keys.byApp(app.appId),
      gsi1sk: `${createdAt}#${id}`,
      gsi2pk: keys.byPrincipal(app.appId, input.referenceId),
      gsi2sk: `${createdAt}#${id}`,
    }),
    [],
    [
      notificationItem(
        rt,
        {
          type: 'grievance.filed',
          appId: app.appId,
          referenceId: input.referenceId,
          grievanceId: id,
        },
        nowMs,
      ),
    ],
  );
  const g: Grievance = { ...base, ...initial };
  dutyMetrics(rt.registry).filed.inc({ via: input.via });
  return g;
}

async function load(rt: GrievanceDeps, appId: string, id: string): Promise<Stored | undefined> {
  if (!grievanceIdPattern.test(id)) return undefined;
  return loadDutyItem<Grievance>(rt, keys.item(appId, id));
}

const strip = ({ version: _v, ...g }: Stored): Grievance => g;

const record = (g: Stored): DutyRecord => ({
  kind: 'grievance',
  appId: g.appId,
  id: g.grievanceId,
  key: keys.item(g.appId, g.grievanceId),
  version: g.version,
  complianceFlag: g.complianceFlag,
  facts: factsOf(g),
});

export async function getGrievance(
  rt: GrievanceDeps,
  appId: string,
  id: string,
): Promise<Grievance | undefined> {
  const g = await load(rt, appId, id);
  return g && strip(g);
}

/**
 * Records the app's answer. The flag freezes at this instant: `ok` on time, `breach` late. A
 * second answer is refused (409): the first is what the principal was told.
 */
export async function answerGrievance(
  rt: GrievanceDeps,
  appId: string,
  id: string,
  input: { answer: string; resolution: 'resolved' | 'rejected' },
  now = new Date(),
): Promise<Grievance> {
  const g = await load(rt, appId, id);
  if (!g) throw new AppError('SVC_NOT_FOUND', 'Unknown grievance');
  if (g.status === 'answered')
    throw new AppError('SVC_CONFLICT', 'This grievance has been answered already');
  const nowMs = now.getTime();
  const answeredAt = now.toISOString();
  const sets = {
    status: 'answered',
    answer: input.answer,
    resolution: input.resolution,
    answeredAt,
  };
  const change = await closeDuty(
    rt,
    record(g),
    sets,
    [
      notificationItem(
        rt,
        { type: 'grievance.answered', appId, referenceId: g.referenceId, grievanceId: id },
        nowMs,
      ),
    ],
    nowMs,
    () => new AppError('SVC_CONFLICT', 'The grievance changed meanwhile; read it and retry'),
  );
  return strip({
    ...g,
    status: 'answered',
    answer: input.answer,
    resolution: input.resolution,
    answeredAt,
    ...(change ? { complianceFlag: change.flag, flagHistory: [...g.flagHistory, change] } : {}),
  });
}

/** The timers worker's check of one grievance (checkDuty). */
export async function checkGrievance(
  rt: GrievanceDeps,
  e: Pick<DutyEntry, 'appId' | 'id'>,
  nowMs: number,
): Promise<FlagChange | undefined> {
  const g = await load(rt, e.appId, e.id);
  if (!g || g.status !== 'open') return undefined;
  return checkDuty(rt, record(g), nowMs);
}

/** The app's grievances, oldest first, by time range, status and flag. */
export async function listGrievances(rt: GrievanceDeps, appId: string, q: GrievanceListQuery) {
  const page = await listPage(rt, {
    index: 'gsi1',
    pk: keys.byApp(appId),
    from: q.from,
    to: q.to,
    equals: {
      status: q.status,
      complianceFlag: q.flag === undefined ? undefined : q.flag === 'none' ? null : q.flag,
    },
    limit: q.limit,
    cursor: q.cursor,
  });
  return { items: page.items.map((i) => withoutKeys<Grievance>(i)), nextCursor: page.nextCursor };
}

/** One principal's grievances, newest first. */
export async function listPrincipalGrievances(
  rt: GrievanceDeps,
  appId: string,
  referenceId: string,
  q: { limit: number; cursor?: string | undefined },
) {
  const page = await listPage(rt, {
    index: 'gsi2',
    pk: keys.byPrincipal(appId, referenceId),
    limit: q.limit,
    cursor: q.cursor,
    newestFirst: true,
  });
  return { items: page.items.map((i) => withoutKeys<Grievance>(i)), nextCursor: page.nextCursor };
}
