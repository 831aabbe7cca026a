import { pino, type Logger } from 'pino';

export type { Logger };

export function createLogger(opts: { level: string; name?: string }): Logger {
  return pino({
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
  });
}
