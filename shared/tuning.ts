/**
 * Fixed values: numbers (and one name) the code needs that an operator has no reason to change,
 * so they are not read from the environment. Tests, benchmarks and the fault suite give other
 * values in code, as `loadConfig(env, tuning)`; `BaseConfig` carries them beside the settings.
 * A name of these set in the environment is refused by `loadConfig`. Listed in
 * docs/operations.md, Fixed values.
 */
export const tuning = {
  // Ledger checkpoints: every process must agree on them, so no process sets its own.
  /** Each app's dispatches are sealed per period of this length (by the event's createdAt). */
  LEDGER_CHECKPOINT_PERIOD_MS: 3_600_000,
  /** How long after a period closes it is sealed, so writes in flight land first. */
  LEDGER_CHECKPOINT_LAG_MS: 300_000,
  /** Margin before a period's first sealing within which a new dispatch gets a change stamp. */
  LEDGER_CHANGE_STAMP_MARGIN_MS: 60_000,
  /** How often the checkpoint worker looks for a closed period or changes to seal. */
  LEDGER_CHECKPOINT_INTERVAL_MS: 15_000,

  /** How often a writer saves its progress item (its heartbeat and watermark). */
  OUTBOX_RELAY_INTERVAL_MS: 1_000,
  /** A writer whose heartbeat stands still this long is taken for stopped and relayed. */
  OUTBOX_WRITER_STALE_MS: 10_000,

  /** The SLA family's sweep: how late a breach may be flagged. */
  TIMER_SWEEP_INTERVAL_MS: 1_000,
  /** The expiry family's sweep (reminders, expiries, erasure scrubs, inactivity): days-long deadlines. */
  EXPIRY_SWEEP_INTERVAL_MS: 10_000,
  /** The duty family's sweep (grievance and breach-report deadlines): days-long deadlines. */
  DUTY_SWEEP_INTERVAL_MS: 10_000,
  /** How often the awaiting-postback and erasure gauges are refreshed (Prometheus scrapes at 15 s). */
  COMPLIANCE_GAUGE_INTERVAL_MS: 15_000,
  /** Postbacks accepted per dispatch; past it the postback API answers 429 (an abuse bound). */
  POSTBACK_MAX_PER_DISPATCH: 20,

  /** Concurrent first attempts per endpoint (retries: 2 per endpoint), so one receiver is not flooded. */
  DISPATCH_CONCURRENCY_PER_ENDPOINT: 8,
  /** How far producers' clocks may run ahead of the dispatcher's. */
  DISPATCH_CLOCK_SKEW_MS: 60_000,
  /** An attempt not completed this long after it was due is attempted again (> WEBHOOK_TIMEOUT_MS + 2 s). */
  DISPATCH_SAFETY_NET_MS: 60_000,
  /** How often the retry sweeper reads the due-index (its shards: TIMER_SHARDS). */
  DISPATCH_SWEEP_INTERVAL_MS: 1_000,

  /** How long a credential lookup is cached in a process; cleared at once there on change. */
  CREDENTIAL_CACHE_TTL_MS: 1_000,
  /** Anonymous widget captures per app and client IP allowed at once (the rate is a setting). */
  RATE_LIMIT_CAPTURE_PER_IP_BURST: 30,
  /** Failed authentications per client address allowed at once (the rate is a setting). */
  RATE_LIMIT_AUTH_FAILURE_BURST: 30,

  /** How long the group waits for a silent member before its partitions move. */
  CONSUMER_SESSION_TIMEOUT_MS: 30_000,
  /** The Kafka client id; TOPIC_PREFIX tells deployments apart. */
  KAFKA_CLIENT_ID: 'svc-consent',
};

export type Tuning = typeof tuning;
export type TuningName = keyof Tuning;

export const tuningNames = Object.keys(tuning) as TuningName[];

export function isTuningName(name: string): name is TuningName {
  return Object.hasOwn(tuning, name);
}
