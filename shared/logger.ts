import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * The process's JSON logger. Command-line tools log to stderr (`toStderr`), so what they print
 * on stdout (`npm run dlq -- list --json`, say) stays theirs alone.
 */
export function createLogger(opts: { level: string; name?: string; toStderr?: boolean }): Logger {
  const options = {
    level: opts.level,
    ...(opts.name ? { name: opts.name } : {}),
    redact: {
      paths: [
        'secretKey',
        '*.secretKey',
        'key',
        '*.key',
        'headers.authorization',
        'headers["x-secret-key"]',
      ],
      censor: '[redacted]',
    },
  };
  return opts.toStderr ? pino(options, pino.destination(2)) : pino(options);
}
