import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { createTransport } from 'nodemailer';
import { stackPaths } from '../../infra/local/paths.js';
import type { BaseConfig } from '../config.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';

/**
 * Outgoing e-mail. With SMTP_URL set, messages go to that SMTP server (nodemailer); without
 * it (the embedded default) each message is written as an RFC 5322 `.eml` file in MAIL_DIR
 * (default `${SVC_HOME or .svc}/mail/`) and its path is logged, so a developer can open it.
 */

export interface MailMessage {
  /** A stable id (e.g. the event id): becomes the Message-ID, so a resend is recognisable. */
  id: string;
  to: string;
  subject: string;
  text: string;
  html: string;
  replyTo?: string | undefined;
}

export interface SentMail {
  messageId: string;
  /** The .eml file, when no SMTP server is configured. */
  file?: string;
}

export interface Mailer {
  readonly kind: 'smtp' | 'eml';
  /** Throws an AppError: SVC_UNAVAILABLE when a retry may succeed, SVC_INTERNAL when not. */
  send(m: MailMessage): Promise<SentMail>;
  close(): void;
}

export type MailConfig = Pick<BaseConfig, 'SMTP_URL' | 'MAIL_FROM' | 'MAIL_DIR'>;

/** `<id@domain>` with the domain of MAIL_FROM, so ids stay unique across deployments. */
export function messageIdFor(id: string, from: string): string {
  const domain = /@([A-Za-z0-9.-]+)/.exec(from)?.[1] ?? 'svc-consent.invalid';
  return `<${id.replace(/[^A-Za-z0-9._-]/g, '_')}@${domain}>`;
}

/**
 * SMTP failures sorted for the consumer runner: a 5xx reply is permanent (the message would
 * be refused again), anything else (4xx, connection, timeout) is worth retrying.
 */
export function smtpError(err: unknown): AppError {
  const e = err as { responseCode?: number; code?: string; message?: string };
  const detail = `SMTP: ${e?.code ?? 'error'}${e?.responseCode ? ` ${e.responseCode}` : ''}`;
  if (typeof e?.responseCode === 'number' && e.responseCode >= 500)
    return new AppError('SVC_INTERNAL', `${detail} (refused)`, { cause: err });
  return new AppError('SVC_UNAVAILABLE', `${detail} (will retry)`, { retryAfterS: 5, cause: err });
}

function fields(m: MailMessage, from: string) {
  return {
    from,
    to: m.to,
    subject: m.subject,
    text: m.text,
    html: m.html,
    messageId: messageIdFor(m.id, from),
    ...(m.replyTo ? { replyTo: m.replyTo } : {}),
  };
}

/**
 * nodemailer waits up to 2 min to connect and 10 min on a silent socket by default; a hung
 * server would hold a consumer partition that long. Query parameters of SMTP_URL (e.g.
 * `?socketTimeout=60000`, `?pool=true`) override these.
 */
const SMTP_TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 30_000 };

function smtpMailer(url: string, from: string, log: Logger): Mailer {
  const transport = createTransport({ url, ...SMTP_TIMEOUTS });
  return {
    kind: 'smtp',
    async send(m) {
      try {
        const info = await transport.sendMail(fields(m, from));
        log.debug({ messageId: info.messageId }, 'e-mail sent');
        return { messageId: info.messageId };
      } catch (err) {
        throw smtpError(err);
      }
    },
    close: () => transport.close(),
  };
}

function emlMailer(dir: string, from: string, log: Logger): Mailer {
  // nodemailer builds the complete MIME message; only the delivery is replaced by a file.
  const transport = createTransport({ streamTransport: true, buffer: true, newline: 'unix' });
  return {
    kind: 'eml',
    async send(m) {
      const info = await transport.sendMail(fields(m, from));
      const stamp = new Date().toISOString().replace(/[:.]/g, '-');
      const file = path.join(dir, `${stamp}-${m.id.replace(/[^A-Za-z0-9_-]/g, '_')}.eml`);
      const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
      await fs.mkdir(dir, { recursive: true });
      // Written aside then renamed, so a reader of the folder never sees half a message.
      await fs.writeFile(tmp, info.message as Buffer, { mode: 0o600 });
      await fs.rename(tmp, file);
      log.info({ file, messageId: info.messageId }, 'e-mail written to a file (SMTP_URL is unset)');
      return { messageId: info.messageId, file };
    },
    close: () => transport.close(),
  };
}

/** The mailer for this config: SMTP when SMTP_URL is set, else .eml files in MAIL_DIR. */
export function createMailer(config: MailConfig, log: Logger): Mailer {
  return config.SMTP_URL
    ? smtpMailer(config.SMTP_URL, config.MAIL_FROM, log)
    : emlMailer(config.MAIL_DIR ?? path.join(stackPaths().root, 'mail'), config.MAIL_FROM, log);
}
