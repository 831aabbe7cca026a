import { LEDGER_TTL_ATTR } from '../../../infra/definitions/tables.js';

/**
 * How long the ledger keeps what it holds (docs/retention.md): every ledger item (a dispatch,
 * its delivery attempts, postbacks and flag changes) carries `retainUntil`, epoch seconds, the
 * table's DynamoDB TTL attribute. It is set on every write to the item from the app's
 * `ledgerRetentionDays` at that moment, so an item is kept at least that long after it last
 * changed, and DynamoDB deletes it some time after.
 *
 * The setting can never go below a year (DPDP Rules 6 and 8(3): logs of processing are kept
 * for at least one year). A year is counted as 366 days so that a period with a 29 February in
 * it is a whole year too.
 */

/** The item attribute DynamoDB's TTL reads (declared with the table). */
export const RETAIN_ATTR = LEDGER_TTL_ATTR;

export const MIN_RETENTION_DAYS = 366;
export const DEFAULT_RETENTION_DAYS = 366;
/** Ten years: beyond that a setting is much more likely a typo than a policy. */
export const MAX_RETENTION_DAYS = 3650;

export const RETENTION_RULE =
  'ledger entries, postbacks and delivery logs are kept at least one year (366 days, so a leap year is covered)';

const DAY_MS = 86_400_000;

/** The app's retention in days, the default for apps created before the setting existed. */
export function retentionDaysOf(app: { ledgerRetentionDays?: number } | undefined): number {
  const days = app?.ledgerRetentionDays;
  // Never below the floor, whatever an old or hand-edited item holds.
  return typeof days === 'number' && Number.isFinite(days)
    ? Math.min(MAX_RETENTION_DAYS, Math.max(MIN_RETENTION_DAYS, Math.floor(days)))
    : DEFAULT_RETENTION_DAYS;
}

/**
 * `retainUntil` for an item written at `writtenAtMs` by an app keeping its ledger `days` days:
 * epoch seconds, rounded up so the item is never eligible a fraction of a second early.
 */
export function retainUntil(writtenAtMs: number, days: number): number {
  return Math.ceil((writtenAtMs + days * DAY_MS) / 1000);
}

/** `retainUntil` for an item of `app` written now (or at `nowMs`). */
export function retainUntilFor(
  app: { ledgerRetentionDays?: number } | undefined,
  nowMs: number = Date.now(),
): number {
  return retainUntil(nowMs, retentionDaysOf(app));
}
