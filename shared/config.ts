import { z } from 'zod';

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
  BODY_LIMIT_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(64 * 1024),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().positive().default(15_000),
  OUTBOX_RELAY_INTERVAL_MS: z.coerce.number().int().positive().default(1_000),
  /** Outbox items younger than this are left to the fast path. */
  OUTBOX_RELAY_MIN_AGE_MS: z.coerce.number().int().nonnegative().default(2_000),
  CONSUMER_MAX_RETRIES: z.coerce.number().int().nonnegative().default(5),
  /** Per-app request budget (token bucket, per process): sustained rate and burst. */
  RATE_LIMIT_RPS: z.coerce.number().positive().default(1000),
  RATE_LIMIT_BURST: z.coerce.number().positive().default(2000),
  /** In-process cache of credential lookups (site/secret/API keys); cleared at once on change. */
  CREDENTIAL_CACHE_TTL_MS: z.coerce.number().int().nonnegative().default(1_000),
  /** Origin the service is reached at, for links in events and e-mails ({postback_url} etc.). */
  PUBLIC_BASE_URL: z.string().url().default('http://localhost:8080'),
  SVC_ADMIN_TOKEN: z.string().min(16).optional(),
  /** 32-byte key (base64 or hex) for encrypting secret keys at rest. */
  SVC_ENCRYPTION_KEY: z.string().optional(),
});

export type BaseConfig = z.infer<typeof baseConfigSchema>;

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

export function loadConfig(env: NodeJS.ProcessEnv = process.env): BaseConfig {
  return parseConfig(baseConfigSchema, env);
}

/** True when the config names no external infrastructure: start the embedded stack. */
export function wantsEmbeddedStack(
  c: Pick<BaseConfig, 'KAFKA_BROKERS' | 'DYNAMODB_ENDPOINT' | 'AWS_REGION'>,
) {
  return !c.KAFKA_BROKERS && !c.DYNAMODB_ENDPOINT && !c.AWS_REGION;
}

const secretKeys = /PASSWORD|SECRET|TOKEN|ENCRYPTION_KEY/;

export function redactConfig<T extends object>(c: T): T {
  return Object.fromEntries(
    Object.entries(c).map(([k, v]) => [
      k,
      secretKeys.test(k) && v !== undefined ? '[redacted]' : v,
    ]),
  ) as T;
}
