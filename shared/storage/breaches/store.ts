import { GetCommand } from '@aws-sdk/lib-dynamodb';
import { ulid } from 'ulid';
import { dutyDeadlines, type DutyFacts } from '../../domain/duties/clock.js';
import { listPage, withoutKeys } from '../duties/list.js';
import { notificationItem } from '../duties/notifications.js';
import {
  checkDuty,
  closeDuty,
  commitDuty,
  dutyMetrics,
  dutyUpdate,
  loadDutyItem,
  openDuty,
  type DutyEntry,
  type DutyRecord,
  type FlagChange,
  type DutyDeps,
} from '../duties/store.js';
import type { App } from '../../domain/types.js';
import { AppError } from '../../errors.js';
import type { OutboxItem, TransactItem } from '../outbox/outbox.js';
import { queryAll } from '../query.js';
import { resolveAffected, type AffectedDeps } from './affected.js';
import {
  BATCH_SIZE,
  BOARD_REPORT_WINDOW_MS,
  CLOCK_SKEW_MS,
  breachIdPattern,
  type Affected,
  type Breach,
  type BreachListQuery,
  type RecordBreachInput,
} from '../../domain/duties/breaches.js';

/** What breaches use; a Runtime is one. */
export type BreachDeps = DutyDeps & AffectedDeps;

/**
 * Breaches in `entities`:
 * - head     pk APP#{appId}#BRC#{id}  sk BRC        gsi1 APP#{appId}#BRCS / {createdAt}#{id}
 * - affected pk APP#{appId}#BRC#{id}  sk AFF#{0000}  one batch of up to 100 principals
 * Recording a breach is one commit: the head, its batches, the Board-report timer, the gauge
 * counters and one notification message per batch (the notifier mails each principal).
 */

const keys = {
  head: (appId: string, id: string) => ({ pk: `APP#${appId}#BRC#${id}`, sk: 'BRC' }),
  batch: (appId: string, id: string, n: number) => ({
    pk: `APP#${appId}#BRC#${id}`,
    sk: `AFF#${String(n).padStart(4, '0')}`,
  }),
  byApp: (appId: string) => `APP#${appId}#BRCS`,
};

type Stored = Breach & { version: number };

export const newBreachId = () => `brc_${ulid()}`;

const factsOf = (b: Pick<Breach, 'boardReport'>): DutyFacts => ({
  dueAt: Date.parse(b.boardReport.dueAt),
  atRiskAt: Date.parse(b.boardReport.atRiskAt),
  doneAt: b.boardReport.filedAt === null ? undefined : Date.parse(b.boardReport.filedAt),
});

/** Batch items and their notification messages, numbered from `first`. */
function batchWrites(
  rt: BreachDeps,
  appId: string,
  breachId: string,
  affected: Affected[],
  first: number,
  nowMs: number,
): { items: TransactItem[]; messages: OutboxItem[]; count: number } {
  const items: TransactItem[] = [];
  const messages: OutboxItem[] = [];
  for (let i = 0, n = first; i < affected.length; i += BATCH_SIZE, n++) {
    items.push({
      Put: {
        TableName: rt.tables.entities,
        Item: { ...keys.batch(appId, breachId, n), principals: affected.slice(i, i + BATCH_SIZE) },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    });
    messages.push(
      notificationItem(rt, { type: 'breach.notify', appId, breachId, batch: n }, nowMs),
    );
  }
  return { items, messages, count: messages.length };
}

export async function recordBreach(
  rt: BreachDeps,
  app: App,
  input: RecordBreachInput,
  now = new Date(),
): Promise<Breach> {
  const nowMs = now.getTime();
  const detectedMs = Date.parse(input.detectedAt);
  if (detectedMs > nowMs + CLOCK_SKEW_MS)
    throw new AppError('SVC_VALIDATION_FAILED', 'The body is not valid', {
      errors: [{ path: '/detectedAt', message: 'must not be in the future' }],
    });
  const affected = await resolveAffected(rt, app.appId, input.principals);
  const id = newBreachId();
  const createdAt = now.toISOString();
  const dl = dutyDeadlines(detectedMs, BOARD_REPORT_WINDOW_MS, app.slaTimeScale);
  const batches = batchWrites(rt, app.appId, id, affected, 0, nowMs);
  const base = {
    breachId: id,
    appId: app.appId,
    description: input.description,
    consequences: input.consequences,
    mitigations: input.mitigations,
    steps: input.steps,
    contact: input.contact,
    detectedAt: new Date(detectedMs).toISOString(),
    createdAt,
    affectedCount: affected.length,
    batches: batches.count,
    boardReport: {
      dueAt: new Date(dl.dueAt).toISOString(),
      atRiskAt: new Date(dl.atRiskAt).toISOString(),
      filedAt: null,
      reference: null,
      note: null,
    },
  };
  const initial = await openDuty(
    rt,
    { kind: 'board_report', appId: app.appId, id, deadlines: dl, nowMs },
    (start) => ({
      ...base,
      ...start,
      ...keys.head(app.appId, id),
      gsi1pk: keys.byApp(app.appId),
      gsi1sk: `${createdAt}#${id}`,
    }),
    batches.items,
    batches.messages,
  );
  dutyMetrics(rt.registry).breaches.inc();
  const b: Breach = { ...base, ...initial };
  return b;
}

async function load(rt: BreachDeps, appId: string, id: string): Promise<Stored | undefined> {
  if (!breachIdPattern.test(id)) return undefined;
  return loadDutyItem<Breach>(rt, keys.head(appId, id));
}

const strip = ({ version: _v, ...b }: Stored): Breach => b;

const record = (b: Stored): DutyRecord => ({
  kind: 'board_report',
  appId: b.appId,
  id: b.breachId,
  key: keys.head(b.appId, b.breachId),
  version: b.version,
  complianceFlag: b.complianceFlag,
  facts: factsOf(b),
});

export async function getBreach(rt: BreachDeps, appId: string, id: string) {
  const b = await load(rt, appId, id);
  return b && strip(b);
}

const notFound = () => new AppError('SVC_NOT_FOUND', 'Unknown breach');
const changed = () =>
  new AppError('SVC_CONFLICT', 'The breach changed meanwhile; read it and retry');

/** More affected principals for a recorded breach; each is mailed once per breach. */
export async function addAffected(
  rt: BreachDeps,
  appId: string,
  breachId: string,
  named: readonly { userId?: string | undefined; referenceId?: string | undefined }[],
  now = new Date(),
): Promise<Breach> {
  const b = await load(rt, appId, breachId);
  if (!b) throw notFound();
  const affected = await resolveAffected(rt, appId, named);
  const w = batchWrites(rt, appId, breachId, affected, b.batches, now.getTime());
  await commitDuty(
    rt,
    [
      dutyUpdate(rt.tables.entities, keys.head(appId, breachId), b.version, {}, undefined, {
        affectedCount: affected.length,
        batches: w.count,
      }),
      ...w.items,
    ],
    w.messages,
    changed,
  );
  return strip({
    ...b,
    affectedCount: b.affectedCount + affected.length,
    batches: b.batches + w.count,
  });
}

/**
 * Records that the detailed report went to the Board (at the service's clock: the evidence
 * cannot be back-dated). The flag freezes: `ok` within 72 hours of detection, `breach` later.
 */
export async function fileBoardReport(
  rt: BreachDeps,
  appId: string,
  breachId: string,
  input: { reference?: string | undefined; note?: string | undefined },
  now = new Date(),
): Promise<Breach> {
  const b = await load(rt, appId, breachId);
  if (!b) throw notFound();
  if (b.boardReport.filedAt !== null)
    throw new AppError('SVC_CONFLICT', 'The report to the Board is recorded already');
  const nowMs = now.getTime();
  const boardReport = {
    ...b.boardReport,
    filedAt: now.toISOString(),
    reference: input.reference ?? null,
    note: input.note ?? null,
  };
  const change = await closeDuty(rt, record(b), { boardReport }, [], nowMs, changed);
  return strip({
    ...b,
    boardReport,
    ...(change ? { complianceFlag: change.flag, flagHistory: [...b.flagHistory, change] } : {}),
  });
}

/** The timers worker's check of a breach's Board report (checkDuty). */
export async function checkBoardReport(
  rt: BreachDeps,
  e: Pick<DutyEntry, 'appId' | 'id'>,
  nowMs: number,
): Promise<FlagChange | undefined> {
  const b = await load(rt, e.appId, e.id);
  if (!b || b.boardReport.filedAt !== null) return undefined;
  return checkDuty(rt, record(b), nowMs);
}

/** One stored batch of affected principals (the notifier's read). */
export async function loadBatch(
  rt: BreachDeps,
  appId: string,
  breachId: string,
  n: number,
): Promise<Affected[] | undefined> {
  const r = await rt.dynamo.doc.send(
    new GetCommand({
      TableName: rt.tables.entities,
      Key: keys.batch(appId, breachId, n),
      ConsistentRead: true,
    }),
  );
  return r.Item ? (r.Item.principals as Affected[]) : undefined;
}

/** Every affected principal of a breach, batch by batch (for the ledger export). */
export async function affectedOf(rt: BreachDeps, appId: string, breachId: string) {
  const items = await queryAll(rt.dynamo.doc, {
    TableName: rt.tables.entities,
    KeyConditionExpression: 'pk = :pk AND begins_with(sk, :aff)',
    ExpressionAttributeValues: { ':pk': keys.head(appId, breachId).pk, ':aff': 'AFF#' },
    ConsistentRead: true,
  });
  return items.flatMap((i) => i.principals as Affected[]);
}

export async function listBreaches(rt: BreachDeps, appId: string, q: BreachListQuery) {
  const page = await listPage(rt, {
    index: 'gsi1',
    pk: keys.byApp(appId),
    from: q.from,
    to: q.to,
    equals: {
      complianceFlag: q.flag === undefined ? undefined : q.flag === 'none' ? null : q.flag,
    },
    limit: q.limit,
    cursor: q.cursor,
  });
  return { items: page.items.map((i) => withoutKeys<Breach>(i)), nextCursor: page.nextCursor };
}
