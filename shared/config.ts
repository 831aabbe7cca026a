import { z } from 'zod';
import { busSettings } from './bus/settings.js';
import { httpSettings, parseTrustProxy } from './http/settings.js';
import { mailSettings } from './mail/settings.js';
import { keySettings } from './signing/settings.js';
import { storageSettings } from './storage/settings.js';
import { timerSettings } from './timers/settings.js';
import { tuning, tuningNames, type Tuning } from './tuning.js';
import { classifyIp, decideAddress, parseCidrList } from './net/ip.js';
import { webhookSettings } from './webhooks/settings.js';

/**
 * Every process's settings (what an operator sets in the environment), assembled from each
 * module's group; each group sits beside the module that reads it. Units are in the names;
 * secrets are redacted by `redactConfig` before logging. What each is for: docs/operations.md,
 * Settings. The fixed values beside them are `tuning` (shared/tuning.ts).
 */
export const baseConfigSchema = z.object({
  ...httpSettings,
  ...busSettings,
  ...storageSettings,
  ...keySettings,
  ...webhookSettings,
  ...timerSettings,
  ...mailSettings,
});

type ParsedConfig = z.infer<typeof baseConfigSchema>;

/**
 * The configuration once `loadConfig` has settled the defaults that depend on other keys, with
 * the fixed values beside the settings, so a module reads both as `config.X`.
 */
export type BaseConfig = Omit<ParsedConfig, 'WEBHOOK_ALLOW_LOOPBACK_SANDBOX'> & {
  WEBHOOK_ALLOW_LOOPBACK_SANDBOX: boolean;
} & Tuning;

export { parseTrustProxy };

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
 * `overrides` replaces fixed values, for tests and benchmarks only; a fixed value's name in `env`
 * is refused, so an operator who sets one learns that it does nothing.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Tuning> = {},
): BaseConfig {
  const given = tuningNames.filter((k) => env[k] !== undefined && env[k] !== '');
  if (given.length > 0)
    throw new ConfigError(
      `not settings but fixed values (docs/operations.md, Fixed values); unset ${given
        .map((k) => `${k} (fixed at ${tuning[k]})`)
        .join(', ')}`,
    );
  const parsed = parseConfig(baseConfigSchema, env);
  const config: BaseConfig = {
    ...tuning,
    ...overrides,
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
  if (c.METRICS_TOKEN === undefined)
    problems.push(
      'METRICS_TOKEN must be set: /metrics is public without it (e.g. openssl rand -base64 32)',
    );
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
