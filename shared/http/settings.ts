import { z } from 'zod';
import { parseCidr } from '../net/ip.js';
import { positiveInt } from '../env.js';

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

/** The process and its HTTP server (docs/operations.md, Settings). */
export const httpSettings = {
  NODE_ENV: z.string().default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().default('127.0.0.1'),
  /** Whose X-Forwarded-For / -Proto are believed: true, false, a hop count, or addresses/CIDRs. */
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
  /** Origin the service is reached at, for links in events and e-mails. */
  PUBLIC_BASE_URL: z.string().url().default('http://localhost:8080'),
  /** A request not answered by then gets 503 with Retry-After. */
  HTTP_DEADLINE_MS: positiveInt(1_800),
  /** API requests in progress at once per process; one more is answered 503 at once. */
  HTTP_MAX_IN_FLIGHT: positiveInt(64),
  /** Event-loop lag past which admission halves (shared/http/lag-limit.ts); 0: off. */
  HTTP_LAG_SHED_MS: z.coerce.number().int().nonnegative().default(250),
  BODY_LIMIT_BYTES: positiveInt(64 * 1024),
  SHUTDOWN_TIMEOUT_MS: positiveInt(15_000),
  /** Request budget per app and credential class, per process: sustained rate and burst. */
  RATE_LIMIT_RPS: z.coerce.number().positive().default(1000),
  RATE_LIMIT_BURST: z.coerce.number().positive().default(2000),
  /** Anonymous widget captures per app and client IP, per process (burst: shared/tuning.ts). */
  RATE_LIMIT_CAPTURE_PER_IP_RPS: z.coerce.number().positive().default(2),
  /** Failed authentications per client address, per process, past which 429 (burst: shared/tuning.ts). */
  RATE_LIMIT_AUTH_FAILURE_RPS: z.coerce.number().positive().default(1),
  SVC_ADMIN_TOKEN: z.string().min(16).optional(),
  /** When set, `/metrics` requires `Authorization: Bearer <METRICS_TOKEN>`; production requires it. */
  METRICS_TOKEN: z.string().min(16).optional(),
  /** Standard OpenTelemetry variables: traces go to this OTLP/HTTP endpoint when set. */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.string().url().optional(),
  OTEL_TRACES_EXPORTER: z.string().optional(),
};
