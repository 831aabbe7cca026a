import { z } from 'zod';
import { classifyIp, decideAddress, parseCidr, parseCidrList } from './webhooks/ip.js';

const bool = z
  .enum(['true', 'false', '1', '0', ''])
  .optional()
  .transform((v) => v === 'true' || v === '1');

/**
 * Configuration shared by every process. Each process may extend it with its own keys.
 * Units are in the names; secrets are redacted by `redactConfig` before logging.
 */
export const baseConfigSchema = z.object({
  NODE_ENV: z.string().default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  /**
   * Whose X-Forwarded-For / -Proto are believed (Express `trust proxy`): `true` (anyone),
   * `false` (no one), a number of proxy hops, or a comma-separated list of addresses, CIDRs
   * and the names loopback, linklocal, uniquelocal.
   */
  TRUST_PROXY: z
    .string()
    .default('loopback')
    .transform((v, ctx) => {
      const t = parseTrustProxy(v);
      if (t === undefined) {
        ctx.addIssue({
          code: 'custom',
          message:
            'expected true, false, a number of hops, or a comma-separated list of addresses, CIDRs, loopback, linklocal, uniquelocal',
        });
        return z.NEVER;
      }
      return t;
    }),
  /** Comma-separated brokers; unset means the embedded local Kafka. */
  KAFKA_BROKERS: z.string().optional(),
  KAFKA_CLIENT_ID: z.string().default('svc-consent'),
  KAFKA_SSL: bool,
  KAFKA_SASL_MECHANISM: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
  KAFKA_SASL_USERNAME: z.string().optional(),
  KAFKA_SASL_PASSWORD: z.string().optional(),
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).default(1),
  TOPIC_PREFIX: z.string().default('svc.'),
  /** DynamoDB endpoint override (DynamoDB Local); unset with AWS_REGION set means AWS. */
  DYNAMODB_ENDPOINT: z.string().url().optional(),
  AWS_REGION: z.string().optional(),
  TABLE_PREFIX: z.string().default('svc_'),
  /** A DynamoDB request with no answer after this long fails (and is retried as transient). */
  DYNAMODB_REQUEST_TIMEOUT_MS: z.coerce.number().int().positive().default(2_000),
  /**
   * An HTTP request not answered after this long gets 503 SVC_UNAVAILABLE with Retry-After
   * (a stalled store must not hang callers). A change still in flight then may or may not
   * land; it was not acknowledged.
   */
  HTTP_DEADLINE_MS: z.coerce.number().int().positive().default(1_800),
  /**
   * API requests in progress at once per process; one more is answered 503 at once, having
   * changed nothing (shared/http/server.ts `admission`).
   */
  HTTP_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(64),
  /**
   * While the event loop lags more than this (ms, the longest delay of a 250 ms window), the
   * number of API requests admitted at once halves, down to 4, and grows back once the lag is
   * under half of it (shared/http/lag-limit.ts). 0: off, HTTP_MAX_IN_FLIGHT alone.
   */
  HTTP_LAG_SHED_MS: z.coerce.number().int().nonnegative().default(250),
  /**
   * Connections the kernel holds for the HTTP server until it accepts them (listen backlog; the
   * kernel caps it at net.core.somaxconn). Node's own default, 511, overflows within a fraction
   * of a second of a busy event loop under a burst: the kernel then drops the connection and
   * the client's TCP stack tries again after 1, 3, 7… s, so the caller waits seconds for an
   * answer the admission control would have given at once.
   */
  HTTP_LISTEN_BACKLOG: z.coerce.number().int().min(1).max(65_535).default(4_096),
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  OUTBOX_RELAY_INTERVAL_MS: z.coerce.number().int().positive().default(1_000),
  /**
   * How long a write waits for its events' fast-path publish to Kafka before it answers anyway
   * (the events are already stored in the outbox; the relay publishes what the fast path did not).
   */
  OUTBOX_PUBLISH_WAIT_MS: z.coerce.number().int().nonnegative().default(1_000),
  /**
   * Commit transactions (a change and its events) in flight at once per process; commits made
   * meanwhile wait and leave together, up to 100 items, in one TransactWriteItems (group commit).
   */
  OUTBOX_TRANSACTIONS_IN_FLIGHT: z.coerce.number().int().min(1).max(64).default(1),
  /**
   * Under sustained load (the last commit transaction carried 3 commits or more), commits that
   * find no transaction in flight wait this long for others to join them; 0 (the default) never
   * waits. Below that load nothing waits. Off by default: measured on 2 cores it made 200/s hold
   * in one run and not in another, and doubled the p99 at 100/s in one of two runs
   * (docs/benchmarks.md).
   */
  OUTBOX_GROUP_LINGER_MS: z.coerce.number().int().min(0).max(50).default(0),
  /** Commits one relay or retry step publishes at once. */
  OUTBOX_RELAY_BATCH: z.coerce.number().int().min(1).max(1000).default(500),
  /**
   * A writer (a process that commits events) saves its progress item every
   * OUTBOX_RELAY_INTERVAL_MS; one whose heartbeat a relay has watched stand still this long is
   * taken for stopped, and the relay publishes its commits from its watermark on
   * (shared/outbox/outbox.ts).
   */
  OUTBOX_WRITER_STALE_MS: z.coerce.number().int().positive().default(10_000),
  /** Stored but unpublished commits a process holds (Kafka down) before it answers 503. */
  OUTBOX_MAX_OPEN: z.coerce.number().int().positive().default(50_000),
  /**
   * A consumer retries a failed message (anything but a malformed one) for as long as the
   * failure lasts; its back-off doubles from 200 ms up to this cap.
   */
  CONSUMER_RETRY_MAX_MS: z.coerce.number().int().positive().default(10_000),
  /**
   * Kafka consumer session timeout: how long the group waits for a silent member (a killed
   * process) before its partitions move to the others.
   */
  CONSUMER_SESSION_TIMEOUT_MS: z.coerce.number().int().min(6_000).default(30_000),
  /**
   * How long the broker may hold a consumer's fetch while it has nothing new: a fetch is
   * answered as soon as a message arrives, so this bounds only the polling of an idle consumer
   * (and how long stopping one waits for its fetch), not the latency of a message.
   */
  CONSUMER_FETCH_MAX_WAIT_MS: z.coerce.number().int().min(10).max(5_000).default(500),
  /**
   * Request budget per app and credential class (secret key, API key, browser, operator):
   * token bucket per process, sustained rate and burst.
   */
  RATE_LIMIT_RPS: z.coerce.number().positive().default(1000),
  RATE_LIMIT_BURST: z.coerce.number().positive().default(2000),
  /** Anonymous widget captures per app and client IP (keyed hash), per process. */
  RATE_LIMIT_CAPTURE_PER_IP_RPS: z.coerce.number().positive().default(2),
  RATE_LIMIT_CAPTURE_PER_IP_BURST: z.coerce.number().positive().default(30),
  /** Failed authentications (401) per client address, per process; past them 429. */
  RATE_LIMIT_AUTH_FAILURE_RPS: z.coerce.number().positive().default(1),
  RATE_LIMIT_AUTH_FAILURE_BURST: z.coerce.number().positive().default(30),
  /** In-process cache of credential lookups (site/secret/API keys); cleared at once on change. */
  CREDENTIAL_CACHE_TTL_MS: z.coerce.number().int().nonnegative().default(1_000),
  /** Origin the service is reached at, for links in events and e-mails ({postback_url} etc.). */
  PUBLIC_BASE_URL: z.string().url().default('http://localhost:8080'),
  /** Standard OpenTelemetry variables: traces go to this OTLP/HTTP endpoint when set. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_TRACES_EXPORTER: z.string().optional(),
  SVC_ADMIN_TOKEN: z.string().min(16).optional(),
  /** When set, `/metrics` requires `Authorization: Bearer <METRICS_TOKEN>`. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** 32-byte key (base64 or hex) for encrypting secret keys at rest. */
  SVC_ENCRYPTION_KEY: z.string().optional(),
  /**
   * Keyring for rotation: `kid:key,kid:key` (32-byte keys, base64 or hex), the first current
   * (it seals and keys hashes), the others only open what they sealed. With it set,
   * SVC_ENCRYPTION_KEY is kept as one more key that only opens (docs/security.md).
   */
  SVC_ENCRYPTION_KEYS: z
    .string()
    .regex(
      /^\s*[A-Za-z0-9_-]{1,32}:[^,:\s]+\s*(,\s*[A-Za-z0-9_-]{1,32}:[^,:\s]+\s*)*$/,
      'kid:key,kid:key',
    )
    .optional(),
  /**
   * Ed25519 signing key (32-byte seed, hex or base64, or a PKCS#8 PEM) for ledger checkpoints
   * and receipts; required in production, else one is generated once into `.svc/signing-key`.
   */
  SVC_SIGNING_KEY: z.string().optional(),
  /** Comma-separated public keys (32 bytes, base64url) still published after a rotation. */
  SVC_SIGNING_RETIRED_KEYS: z.string().default(''),
  /**
   * Ledger checkpoints: each app's dispatches are sealed per period of this length (by the
   * event's createdAt), once the period has been closed for LEDGER_CHECKPOINT_LAG_MS (so
   * writes in flight land first). Every process must use the same period.
   */
  LEDGER_CHECKPOINT_PERIOD_MS: z.coerce.number().int().min(100).default(3_600_000),
  LEDGER_CHECKPOINT_LAG_MS: z.coerce.number().int().nonnegative().default(300_000),
  /**
   * A first attempt's dispatch item is written without a change-index stamp unless it may land
   * within this margin of the first sealing of its period (shared/ledger/changes.ts,
   * `needsStamp`): room for clock skew between processes and for the store's index to catch up.
   */
  LEDGER_CHANGE_STAMP_MARGIN_MS: z.coerce.number().int().nonnegative().default(60_000),
  /** How often the checkpoint worker looks for a closed period or changes to seal. */
  LEDGER_CHECKPOINT_INTERVAL_MS: z.coerce.number().int().positive().default(15_000),
  /** Webhook dispatch (workers/dispatcher): a delivery is a 2xx within this time. */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Comma-separated CIDRs webhooks may reach even though they are not global (SSRF guard). */
  WEBHOOK_ALLOWLIST: z.string().default(''),
  /**
   * Sandbox apps may deliver to loopback (local development receivers). Unset (or empty):
   * only on the embedded default, decided by `loadConfig` from the configuration as given.
   */
  WEBHOOK_ALLOW_LOOPBACK_SANDBOX: z
    .enum(['true', 'false', '1', '0', ''])
    .optional()
    .transform((v) => (v === undefined || v === '' ? undefined : v === 'true' || v === '1')),
  /** An endpoint with no success for this long is disabled and its contact e-mailed. */
  WEBHOOK_DISABLE_AFTER_MS: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 24 * 3_600_000),
  /** Concurrent first attempts per endpoint, and concurrent retries per endpoint (separate budgets). */
  DISPATCH_CONCURRENCY_PER_ENDPOINT: z.coerce.number().int().positive().default(8),
  DISPATCH_RETRY_CONCURRENCY_PER_ENDPOINT: z.coerce.number().int().positive().default(2),
  /**
   * Keep-alive sockets per destination origin (several apps' endpoints may share one); the
   * per-endpoint limits above still bound each endpoint.
   */
  DISPATCH_MAX_SOCKETS_PER_ORIGIN: z.coerce.number().int().positive().default(64),
  /** Concurrent attempts per dispatcher process: first attempts, and retries. */
  DISPATCH_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(512),
  DISPATCH_MAX_RETRY_IN_FLIGHT: z.coerce.number().int().positive().default(128),
  /** Queued first attempts per process before the consumer waits (back-pressure). */
  DISPATCH_MAX_BACKLOG: z.coerce.number().int().positive().default(5_000),
  /** Queued attempts per endpoint; beyond it they are left to the durable due-index. */
  DISPATCH_ENDPOINT_MAX_BACKLOG: z.coerce.number().int().positive().default(500),
  /**
   * Per partition, how many consent events the dispatcher may take past the committed offset
   * (the events a new owner re-checks against the ledger after a rebalance or restart).
   */
  DISPATCH_MAX_UNCOMMITTED: z.coerce.number().int().positive().default(10_000),
  /**
   * How far producers' clocks may run ahead of the dispatcher's. An event created before a
   * partition's assignment plus this is looked up in the ledger before it is sent.
   */
  DISPATCH_CLOCK_SKEW_MS: z.coerce.number().int().nonnegative().default(60_000),
  /** Group-commit ledger writes (BatchWriteItem requests) in flight per dispatcher. */
  DISPATCH_LEDGER_FLUSHES: z.coerce.number().int().positive().default(2),
  /** A dispatch whose attempt has not completed this long after it was due is attempted again. */
  DISPATCH_SAFETY_NET_MS: z.coerce.number().int().positive().default(60_000),
  /** How often the retry sweeper reads the due-index, and how many shards the index has (grow only). */
  DISPATCH_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(1_000),
  DISPATCH_TIMER_SHARDS: z.coerce.number().int().min(1).max(256).default(8),
  /**
   * How long a dispatcher copy's lease of a retry shard lasts (renewed every third of it): a
   * copy that dies holding shards has their due attempts made by another copy this much later
   * at most. At least twice the webhook timeout plus 4 s is used whatever this says.
   */
  DISPATCH_RETRY_LEASE_MS: z.coerce.number().int().positive().default(30_000),
  /** Shards of the SLA-check and consent-expiry due-index (grow only), and how often it is swept. */
  TIMER_SHARDS: z.coerce.number().int().min(1).max(256).default(8),
  TIMER_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(1_000),
  /** The expiry family's sweep (reminders, expiries, erasure scrubs, inactivity): days-scale timers. */
  EXPIRY_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(10_000),
  /** The duty family's sweep (grievance and breach-report deadlines): hours- and days-scale timers. */
  DUTY_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(10_000),
  /** How long a timers worker holds a due entry it fired; past it another copy fires it again. */
  TIMER_LEASE_MS: z.coerce.number().int().positive().default(60_000),
  /** How often the compliance worker refreshes the awaiting-postback and erasure gauges. */
  COMPLIANCE_GAUGE_INTERVAL_MS: z.coerce.number().int().positive().default(15_000),
  /** Postbacks accepted per dispatch; past it the postback API answers 429. */
  POSTBACK_MAX_PER_DISPATCH: z.coerce.number().int().positive().default(20),
  /** Outgoing e-mail: `smtp://user:pass@host:587` or `smtps://…`; unset writes .eml files under SVC_HOME/mail. */
  SMTP_URL: z.string().url().optional(),
  /** Where .eml files go when SMTP_URL is unset; default `${SVC_HOME or .svc}/mail`. */
  MAIL_DIR: z.string().min(1).optional(),
  /** The From header of every e-mail the service sends. */
  MAIL_FROM: z.string().min(3).default('Consent notifications <no-reply@localhost>'),
  /** How long a hosted-portal link in an e-mail stays valid (at most 7 days). */
  PORTAL_LINK_TTL_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(7 * 24 * 3_600_000)
    .default(7 * 24 * 3_600_000),
  /**
   * Key id that new principal tokens (svc_pt_…) are signed under; each id's key is derived
   * from SVC_ENCRYPTION_KEY. Rotate by naming a new id and listing the old one below until
   * the last token signed under it has expired (at most 7 days).
   */
  PRINCIPAL_TOKEN_KEY_ID: z
    .string()
    .regex(/^[A-Za-z0-9]{1,16}$/)
    .default('k1'),
  /** Comma-separated key ids whose tokens are still accepted; empty when none. */
  PRINCIPAL_TOKEN_PREVIOUS_KEY_IDS: z
    .string()
    .regex(/^([A-Za-z0-9]{1,16}(,[A-Za-z0-9]{1,16})*)?$/)
    .default(''),
});

type ParsedConfig = z.infer<typeof baseConfigSchema>;

/** The configuration once `loadConfig` has settled the defaults that depend on other keys. */
export type BaseConfig = Omit<ParsedConfig, 'WEBHOOK_ALLOW_LOOPBACK_SANDBOX'> & {
  WEBHOOK_ALLOW_LOOPBACK_SANDBOX: boolean;
};

const proxyNames = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** TRUST_PROXY as Express takes it; undefined when the text is none of its forms. */
export function parseTrustProxy(text: string): boolean | number | string | undefined {
  const t = text.trim();
  if (t === 'true') return true;
  if (t === 'false') return false;
  if (/^\d+$/.test(t)) return Number(t);
  const entries = t.split(',').map((e) => e.trim());
  const valid = (e: string) => {
    if (proxyNames.has(e)) return true;
    try {
      parseCidr(e);
      return true;
    } catch {
      return false;
    }
  };
  return entries.every((e) => e !== '' && valid(e)) ? entries.join(',') : undefined;
}

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** Parses env with a schema; one readable line per bad key on failure. */
export function parseConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv): z.infer<S> {
  const r = schema.safeParse(env);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`invalid configuration: ${lines.join('; ')}`);
  }
  return r.data;
}

/**
 * Parses the process's configuration as the user gave it. Defaults that depend on it are
 * settled here, before `resolveInfra` fills in the embedded stack's addresses (after which
 * every configuration looks external). With NODE_ENV=production, weak settings are refused.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): BaseConfig {
  const parsed = parseConfig(baseConfigSchema, env);
  const config: BaseConfig = {
    ...parsed,
    WEBHOOK_ALLOW_LOOPBACK_SANDBOX:
      parsed.WEBHOOK_ALLOW_LOOPBACK_SANDBOX ?? wantsEmbeddedStack(parsed),
  };
  if (config.NODE_ENV === 'production') {
    const problems = productionProblems(config);
    if (problems.length > 0)
      throw new ConfigError(`not safe for NODE_ENV=production: ${problems.join('; ')}`);
  }
  return config;
}

const embeddedInProduction =
  'the embedded Kafka and DynamoDB Local are for development only; set KAFKA_BROKERS and AWS_REGION (or DYNAMODB_ENDPOINT)';

/** resolveInfra's own check, for a configuration that did not come through `loadConfig`. */
export function refuseEmbeddedInProduction(c: Pick<BaseConfig, 'NODE_ENV'>): void {
  if (c.NODE_ENV === 'production')
    throw new ConfigError(`NODE_ENV=production: ${embeddedInProduction}`);
}

/** A random secret has many distinct characters (bytes); a placeholder or a pattern has few. */
const MIN_DISTINCT = 8;
const distinct = (xs: Iterable<unknown>) => new Set(xs).size;

/**
 * The 32 bytes of SVC_ENCRYPTION_KEY, read as `parseKey` in shared/domain/crypto.ts reads it
 * (that module imports this one, so it cannot be imported here).
 */
function keyBytes(text: string): Buffer | undefined {
  const t = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(t)) return Buffer.from(t, 'hex');
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(t)) return undefined;
  const b = Buffer.from(t, 'base64');
  return b.length === 32 ? b : undefined;
}

/** True when a destination allowlist lets webhooks reach this host's loopback. */
function allowsLoopback(allowlist: string): boolean {
  const list = parseCidrList(allowlist);
  const policy = { allowlist: list, allowLoopback: false };
  return (
    ['127.0.0.1', '::1', '::ffff:127.0.0.1'].some((a) => decideAddress(a, policy).allowed) ||
    list.some((c) => classifyIp({ family: c.family, value: c.base }) === 'loopback')
  );
}

/** What makes a configuration unsafe to run in production; empty when nothing does. */
export function productionProblems(c: BaseConfig): string[] {
  const problems: string[] = [];
  if (wantsEmbeddedStack(c)) problems.push(embeddedInProduction);
  const token = c.SVC_ADMIN_TOKEN ?? '';
  if (token.length < 32 || distinct(token) < MIN_DISTINCT)
    problems.push(
      'SVC_ADMIN_TOKEN must be a random value of at least 32 characters (e.g. openssl rand -base64 32)',
    );
  const keys = [
    ...(c.SVC_ENCRYPTION_KEYS ?? '')
      .split(',')
      .filter((e) => e.trim())
      .map((e) => ({
        name: `SVC_ENCRYPTION_KEYS ${e.split(':')[0]!.trim()}`,
        text: e.slice(e.indexOf(':') + 1),
      })),
    ...(c.SVC_ENCRYPTION_KEY === undefined
      ? []
      : [{ name: 'SVC_ENCRYPTION_KEY', text: c.SVC_ENCRYPTION_KEY }]),
  ];
  if (keys.length === 0) keys.push({ name: 'SVC_ENCRYPTION_KEY', text: '' });
  for (const k of keys) {
    const key = keyBytes(k.text);
    if (!key || distinct(key) < MIN_DISTINCT)
      problems.push(
        `${k.name} must be 32 random bytes, base64 or hex (e.g. openssl rand -base64 32)`,
      );
  }
  if (c.WEBHOOK_ALLOW_LOOPBACK_SANDBOX)
    problems.push(
      "WEBHOOK_ALLOW_LOOPBACK_SANDBOX must be false (a sandbox app would read this host's own services through webhook replies)",
    );
  try {
    if (allowsLoopback(c.WEBHOOK_ALLOWLIST))
      problems.push('WEBHOOK_ALLOWLIST must not include loopback addresses');
  } catch (err) {
    problems.push(`WEBHOOK_ALLOWLIST: ${(err as Error).message}`);
  }
  if (new URL(c.PUBLIC_BASE_URL).protocol !== 'https:')
    problems.push(
      'PUBLIC_BASE_URL must be the https:// origin the service is reached at (postbacks carry the secret key to it)',
    );
  return problems;
}

/** True when the config names no external infrastructure: start the embedded stack. */
export function wantsEmbeddedStack(
  c: Pick<BaseConfig, 'KAFKA_BROKERS' | 'DYNAMODB_ENDPOINT' | 'AWS_REGION'>,
) {
  return !c.KAFKA_BROKERS && !c.DYNAMODB_ENDPOINT && !c.AWS_REGION;
}

// SMTP_URL may carry the SMTP password in its userinfo.
const secretKeys = /PASSWORD|SECRET|TOKEN|ENCRYPTION_KEY|SIGNING_KEY$|SMTP_URL/;

export function redactConfig<T extends object>(c: T): T {
  return Object.fromEntries(
    Object.entries(c).map(([k, v]) => [
      k,
      secretKeys.test(k) && v !== undefined ? '[redacted]' : v,
    ]),
  ) as T;
}
