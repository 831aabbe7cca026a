import { GetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { Counter, Gauge, type Registry } from 'prom-client';
import { AppError } from '../../errors.js';
import { getOrCreate } from '../../metrics.js';
import type { TableNames } from '../../../infra/definitions/tables.js';
import type { Outbox, TransactItem } from '../outbox/outbox.js';
import { cancellationReasons } from '../dynamo.js';
import { queryAll } from '../query.js';
import { duePutItem, ensureFamily, shardOf, timerKey, type TimerEntry } from '../timers/due.js';
import {
  DUTY_FLAGS,
  dutyFlag,
  nextDutyCheck,
  type DutyCause,
  type DutyFacts,
  type DutyFlag,
} from '../../domain/duties/clock.js';
import { withoutKeys } from './list.js';

/**
 * What grievances and breach reports share: their timers in the `duty#` family of the due-index,
 * their flag history, the counters behind their gauges, and their metrics. Each change of a
 * duty is one `rt.outbox.commit`: the item, its next timer, its counters and its e-mails.
 */

/** What the duties' storage uses; a Runtime is one. */
export interface DutyDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities' | 'timers'>;
  config: { TIMER_SHARDS: number };
  registry: Registry;
  outbox: Pick<Outbox, 'commit'>;
  topics: { notifications: string };
}

/** The messages committed with a duty's change. */
export type DutyMessages = Parameters<Outbox['commit']>[1];

/**
 * A duty's item (a grievance, a breach head), read consistently, without its keys and with its
 * version; undefined if it is not there.
 */
export async function loadDutyItem<T>(
  rt: DutyDeps,
  key: { pk: string; sk: string },
): Promise<(T & { version: number }) | undefined> {
  const r = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.entities, Key: key, ConsistentRead: true }),
  );
  return r.Item ? { ...withoutKeys<T>(r.Item), version: Number(r.Item.version) } : undefined;
}

/** `grievance`: an answer owed to a principal; `board_report`: a breach report owed to the Board. */
export const DUTY_KINDS = ['grievance', 'board_report'] as const;
export type DutyKind = (typeof DUTY_KINDS)[number];

export interface FlagChange {
  flag: DutyFlag;
  at: string;
  cause: DutyCause;
}

/** The stored state every duty item carries (grievance, breach head). */
export interface DutyState {
  complianceFlag: DutyFlag | null;
  flagHistory: FlagChange[];
  /** Optimistic locking: every change is conditional on the version read. */
  version: number;
}

// ---- timers ----

export interface DutyEntry extends TimerEntry {
  kind: DutyKind;
  appId: string;
  /** grievanceId or breachId. */
  id: string;
}

export function dutyEntry(
  kind: DutyKind,
  appId: string,
  id: string,
  dueAtMs: number,
  shards: number,
): DutyEntry {
  return { ...timerKey('duty', `${kind}:${appId}:${id}`, dueAtMs, shards), kind, appId, id };
}

/** The timer for the next change of flag, if the clock alone will change it (never before now). */
export function nextTimerItem(
  rt: DutyDeps,
  kind: DutyKind,
  appId: string,
  id: string,
  facts: DutyFacts,
  nowMs: number,
): TransactItem | undefined {
  const at = nextDutyCheck(facts, nowMs);
  if (at === null) return undefined;
  return duePutItem(rt, dutyEntry(kind, appId, id, Math.max(at, nowMs), rt.config.TIMER_SHARDS));
}

/** Makes sure the family's sweep watermarks exist before a duty timer is first written. */
export const ensureDutyTimers = (rt: DutyDeps, nowMs: number) =>
  ensureFamily(rt, 'duty', rt.config.TIMER_SHARDS, nowMs);

// ---- gauge counters ----

/**
 * Open duties counted by their current flag (`none` while there is time left), kept as counters
 * moved (ADD) in the same transaction as the duty, split over a few items so concurrent writes
 * rarely meet on one. A reader sums them (`readDutyGauges`).
 */
const GAUGE_PK = 'GAUGE#duties';
const GAUGE_SHARDS = 8;
export const OPEN_FLAGS = ['none', 'at_risk', 'breach'] as const;
export type OpenFlag = (typeof OPEN_FLAGS)[number];

export const openFlagOf = (f: DutyFlag | null): OpenFlag =>
  f === 'at_risk' || f === 'breach' ? f : 'none';

export function gaugeItem(
  rt: DutyDeps,
  kind: DutyKind,
  id: string,
  moves: Partial<Record<OpenFlag, number>>,
): TransactItem | undefined {
  const m = Object.entries(moves).filter(([, v]) => v !== 0) as [OpenFlag, number][];
  if (m.length === 0) return undefined;
  return {
    Update: {
      TableName: rt.tables.entities,
      Key: { pk: GAUGE_PK, sk: `${kind}#${shardOf(id, GAUGE_SHARDS)}` },
      UpdateExpression: `ADD ${m.map(([k]) => `#${k} :${k}`).join(', ')}`,
      ExpressionAttributeNames: Object.fromEntries(m.map(([k]) => [`#${k}`, k])),
      ExpressionAttributeValues: Object.fromEntries(m.map(([k, v]) => [`:${k}`, v])),
    },
  };
}

/** Counter moves for a duty going from one state to another (`closed`: done, no longer open). */
export function gaugeMoves(
  before: { open: boolean; flag: DutyFlag | null } | undefined,
  after: { open: boolean; flag: DutyFlag | null },
): Partial<Record<OpenFlag, number>> {
  const out: Partial<Record<OpenFlag, number>> = {};
  const add = (f: OpenFlag, n: number) => (out[f] = (out[f] ?? 0) + n);
  if (before?.open) add(openFlagOf(before.flag), -1);
  if (after.open) add(openFlagOf(after.flag), 1);
  return out;
}

export type DutyGauges = Record<DutyKind, Record<OpenFlag, number>>;

export async function readDutyGauges(rt: DutyDeps): Promise<DutyGauges> {
  const out = Object.fromEntries(
    DUTY_KINDS.map((k) => [k, { none: 0, at_risk: 0, breach: 0 }]),
  ) as DutyGauges;
  const items = await queryAll(rt.dynamo.doc, {
    TableName: rt.tables.entities,
    KeyConditionExpression: 'pk = :pk',
    ExpressionAttributeValues: { ':pk': GAUGE_PK },
    ConsistentRead: true,
  });
  for (const i of items) {
    const t = out[String(i.sk).split('#')[0] as DutyKind];
    if (!t) continue;
    for (const f of OPEN_FLAGS) t[f] += Number(i[f] ?? 0);
  }
  return out;
}

// ---- flag changes ----

/** The flag change at `nowMs`, or undefined when the flag stays as it is. */
export function flagChangeAt(
  state: Pick<DutyState, 'complianceFlag'>,
  facts: DutyFacts,
  nowMs: number,
): FlagChange | undefined {
  const { flag, cause } = dutyFlag(facts, nowMs);
  if (flag === null || cause === null || flag === state.complianceFlag) return undefined;
  return { flag, at: new Date(nowMs).toISOString(), cause };
}

/**
 * An update of a duty item: the SET clauses given (every attribute named through `#name`, so
 * no reserved word can break it), the version bump, the flag change if any, all conditional on
 * the version read.
 */
export function dutyUpdate(
  table: string,
  key: { pk: string; sk: string },
  version: number,
  sets: Record<string, unknown>,
  change: FlagChange | undefined,
  adds: Record<string, number> = {},
): TransactItem {
  const names: Record<string, string> = { '#version': 'version' };
  const values: Record<string, unknown> = { ':v': version, ':next': version + 1 };
  const clauses = ['#version = :next'];
  for (const [attr, v] of Object.entries(sets)) {
    names[`#${attr}`] = attr;
    values[`:${attr}`] = v;
    clauses.push(`#${attr} = :${attr}`);
  }
  for (const [attr, n] of Object.entries(adds)) {
    names[`#${attr}`] = attr;
    values[`:${attr}`] = n;
    clauses.push(`#${attr} = #${attr} + :${attr}`);
  }
  if (change) {
    names['#flag'] = 'complianceFlag';
    names['#history'] = 'flagHistory';
    values[':flag'] = change.flag;
    values[':change'] = [change];
    clauses.push('#flag = :flag', '#history = list_append(#history, :change)');
  }
  return {
    Update: {
      TableName: table,
      Key: key,
      UpdateExpression: `SET ${clauses.join(', ')}`,
      ConditionExpression: '#version = :v',
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
    },
  };
}

const busy = () =>
  new AppError('SVC_UNAVAILABLE', 'The record is being changed concurrently; retry shortly', {
    retryAfterS: 1,
  });

/**
 * Commits a duty's change, turning a lost optimistic lock into `conflict` (what the caller
 * reports) and contention into a retriable 503.
 */
export async function commitDuty(
  rt: DutyDeps,
  items: TransactItem[],
  messages: DutyMessages,
  conflict: () => AppError,
): Promise<void> {
  try {
    await rt.outbox.commit(items, messages);
  } catch (err) {
    const c = cancellationReasons(err);
    if (c && c.failed.size > 0) throw conflict();
    if (c?.contention) throw busy();
    throw err;
  }
}

// ---- metrics ----

/**
 * Metrics of the duties (docs/grievances-and-breaches.md, Metrics). The names are fixed:
 * infra/prometheus/alerts.yml and the Grafana SLA dashboard query them. Bounded labels only.
 */
export function dutyMetrics(registry: Registry) {
  const counter = (name: string, help: string, labelNames: string[]) =>
    getOrCreate(
      registry,
      name,
      () => new Counter({ name, help, labelNames, registers: [registry] }),
    );
  const gauge = (name: string, help: string) =>
    getOrCreate(
      registry,
      name,
      () => new Gauge({ name, help, labelNames: ['flag'], registers: [registry] }),
    );
  const m = {
    flags: {
      grievance: counter(
        'svc_grievance_flags_total',
        'Changes of a grievance’s flag (at_risk near the deadline, breach after it, ok when answered in time), by the flag entered',
        ['flag'],
      ),
      board_report: counter(
        'svc_board_report_flags_total',
        'Changes of the flag of a breach’s report to the Board (72 h), by the flag entered',
        ['flag'],
      ),
    } satisfies Record<DutyKind, Counter>,
    open: {
      grievance: gauge(
        'svc_grievances_open',
        'Unanswered grievances by current flag (none, at_risk, breach); one reporting copy',
      ),
      board_report: gauge(
        'svc_board_reports_pending',
        'Breaches whose report to the Board is not filed, by current flag; one reporting copy',
      ),
    } satisfies Record<DutyKind, Gauge>,
    filed: counter('svc_grievances_filed_total', 'Grievances filed, by channel', ['via']),
    breaches: counter('svc_breaches_recorded_total', 'Personal data breaches recorded', []),
  };
  for (const k of DUTY_KINDS) for (const flag of DUTY_FLAGS) m.flags[k].inc({ flag }, 0);
  m.breaches.inc(0);
  return m;
}

export type DutyMetrics = ReturnType<typeof dutyMetrics>;

// ---- the two changes every duty shares ----

/** A duty as read for a change: where it is, its version, current flag and deadlines. */
export interface DutyRecord {
  kind: DutyKind;
  appId: string;
  id: string;
  key: { pk: string; sk: string };
  version: number;
  complianceFlag: DutyFlag | null;
  facts: DutyFacts;
}

/**
 * The timers worker's check of an open duty: records the flag the clock has reached and
 * schedules the next check, in one commit. Idempotent: a second firing finds nothing to change,
 * and a change made meanwhile (the duty done, another copy's check) makes this one a no-op
 * (the commit is conditional on the version read). Returns the change made, if any.
 */
export async function checkDuty(
  rt: DutyDeps,
  d: DutyRecord,
  nowMs: number,
): Promise<FlagChange | undefined> {
  const change = flagChangeAt(d, d.facts, nowMs);
  const timer = nextTimerItem(rt, d.kind, d.appId, d.id, d.facts, nowMs);
  const conflict = () => new AppError('SVC_CONFLICT', 'changed meanwhile');
  if (!change) {
    if (timer) await commitDuty(rt, [timer], [], conflict);
    return undefined;
  }
  const moves = gaugeMoves(
    { open: true, flag: d.complianceFlag },
    { open: true, flag: change.flag },
  );
  const gauge = gaugeItem(rt, d.kind, d.id, moves);
  try {
    await commitDuty(
      rt,
      [
        dutyUpdate(rt.tables.entities, d.key, d.version, {}, change),
        ...(timer ? [timer] : []),
        ...(gauge ? [gauge] : []),
      ],
      [],
      conflict,
    );
  } catch (err) {
    if (err instanceof AppError && err.code === 'SVC_CONFLICT') return undefined;
    throw err;
  }
  dutyMetrics(rt.registry).flags[d.kind].inc({ flag: change.flag });
  return change;
}

/**
 * Marks a duty done at `nowMs` with the attributes `sets`, in one commit with `messages`; the
 * flag freezes (ok on time, breach late) and the duty leaves the open gauge.
 */
export async function closeDuty(
  rt: DutyDeps,
  d: DutyRecord,
  sets: Record<string, unknown>,
  messages: DutyMessages,
  nowMs: number,
  conflict: () => AppError,
): Promise<FlagChange | undefined> {
  const change = flagChangeAt(d, { ...d.facts, doneAt: nowMs }, nowMs);
  const moves = gaugeMoves({ open: true, flag: d.complianceFlag }, { open: false, flag: null });
  const gauge = gaugeItem(rt, d.kind, d.id, moves);
  await commitDuty(
    rt,
    [dutyUpdate(rt.tables.entities, d.key, d.version, sets, change), ...(gauge ? [gauge] : [])],
    messages,
    conflict,
  );
  if (change) dutyMetrics(rt.registry).flags[d.kind].inc({ flag: change.flag });
  return change;
}

/**
 * Opens a duty: its item (`build` gets the flag it starts with, usually none), the first timer,
 * the gauge counters, any `extra` items and `messages`, in one commit. Returns the initial flag.
 */
export async function openDuty(
  rt: DutyDeps,
  d: { kind: DutyKind; appId: string; id: string; deadlines: DutyFacts; nowMs: number },
  build: (initial: Pick<DutyState, 'complianceFlag' | 'flagHistory'>) => Record<string, unknown>,
  extra: TransactItem[],
  messages: DutyMessages,
): Promise<Pick<DutyState, 'complianceFlag' | 'flagHistory'>> {
  const { flag, cause } = dutyFlag(d.deadlines, d.nowMs);
  const at = new Date(d.nowMs).toISOString();
  const initial = { complianceFlag: flag, flagHistory: flag && cause ? [{ flag, at, cause }] : [] };
  const timer = nextTimerItem(rt, d.kind, d.appId, d.id, d.deadlines, d.nowMs);
  if (timer) await ensureDutyTimers(rt, d.nowMs);
  const gauge = gaugeItem(rt, d.kind, d.id, gaugeMoves(undefined, { open: true, flag }));
  await commitDuty(
    rt,
    [
      {
        Put: {
          TableName: rt.tables.entities,
          Item: { ...build(initial), version: 1 },
          ConditionExpression: 'attribute_not_exists(pk)',
        },
      },
      ...extra,
      ...(timer ? [timer] : []),
      ...(gauge ? [gauge] : []),
    ],
    messages,
    () => new AppError('SVC_CONFLICT', 'A record with this id exists; retry'),
  );
  if (flag) dutyMetrics(rt.registry).flags[d.kind].inc({ flag });
  return initial;
}
