import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import { createMailer, type MailMessage } from '../../shared/mail/index.js';
import { freePort } from '../portal/fixture.js';
import { addresses, startSmtp } from './smtp.js';

/** The mailer against a real SMTP server, and its .eml default on the real file system. */

const log = createLogger({ level: 'silent' });
const FROM = 'Consent <consent@svc.test>';

let smtp: Awaited<ReturnType<typeof startSmtp>>;
let dir: string;

beforeAll(async () => {
  smtp = await startSmtp({
    user: 'u',
    pass: 'p',
    refuse: (rcpt) => (rcpt.startsWith('perm@') ? 550 : rcpt.startsWith('temp@') ? 451 : undefined),
  });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-mail-'));
});

afterAll(async () => {
  await smtp?.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

const msg = (to: string, id = 'evt_TEST'): MailMessage => ({
  id,
  to,
  subject: 'Hello – नमस्ते',
  text: 'Manage consent: https://x.example/portal/SVC-REF-ABCD2345?token=t',
  html: '<p><a href="https://x.example/portal/SVC-REF-ABCD2345?token=t">Manage consent</a></p>',
  replyTo: 'dpo@shop.example',
});

describe('SMTP mailer', () => {
  it('delivers with the credentials of SMTP_URL', async () => {
    const mailer = createMailer({ SMTP_URL: smtp.url, MAIL_FROM: FROM, MAIL_DIR: dir }, log);
    try {
      const sent = await mailer.send(msg('ok@example.test', 'evt_OK'));
      expect(sent.messageId).toBe('<evt_OK@svc.test>');
      const m = smtp.received.find((x) => x.messageId === '<evt_OK@svc.test>');
      expect(addresses(m?.to)).toEqual(['ok@example.test']);
      expect(addresses(m?.replyTo)).toEqual(['dpo@shop.example']);
      expect(m?.subject).toBe('Hello – नमस्ते');
    } finally {
      mailer.close();
    }
  });

  it.each([
    ['a 5xx refusal is permanent', 'perm@example.test', 'SVC_INTERNAL', false],
    ['a 4xx refusal is retried', 'temp@example.test', 'SVC_UNAVAILABLE', true],
  ])('%s', async (_n, to, code, retriable) => {
    const mailer = createMailer({ SMTP_URL: smtp.url, MAIL_FROM: FROM, MAIL_DIR: dir }, log);
    try {
      await expect(mailer.send(msg(to))).rejects.toMatchObject({ code, retriable });
    } finally {
      mailer.close();
    }
  });

  it('refuses permanently with wrong credentials, and retries when the server is down', async () => {
    const wrong = smtp.url.replace('u:p@', 'u:wrong@');
    const bad = createMailer({ SMTP_URL: wrong, MAIL_FROM: FROM, MAIL_DIR: dir }, log);
    await expect(bad.send(msg('ok@example.test'))).rejects.toMatchObject({
      code: 'SVC_INTERNAL',
      retriable: false,
    });
    bad.close();
    const down = createMailer(
      { SMTP_URL: `smtp://127.0.0.1:${await freePort()}`, MAIL_FROM: FROM, MAIL_DIR: dir },
      log,
    );
    await expect(down.send(msg('ok@example.test'))).rejects.toMatchObject({
      code: 'SVC_UNAVAILABLE',
      retriable: true,
    });
    down.close();
  });
});

describe('.eml mailer (no SMTP_URL)', () => {
  it('writes one complete message per send, private to the owner', async () => {
    const mailer = createMailer({ MAIL_FROM: FROM, MAIL_DIR: dir }, log);
    const sent = await mailer.send(msg('ok@example.test', 'evt_FILE'));
    mailer.close();
    expect(sent.file).toBeDefined();
    expect(path.dirname(sent.file!)).toBe(dir);
    expect(sent.file).toMatch(/evt_FILE\.eml$/);
    expect(fs.statSync(sent.file!).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
    const m = await simpleParser(fs.readFileSync(sent.file!));
    expect(m.messageId).toBe('<evt_FILE@svc.test>');
    expect(addresses(m.to)).toEqual(['ok@example.test']);
    expect(addresses(m.from)).toEqual(['consent@svc.test']);
    expect(m.subject).toBe('Hello – नमस्ते');
    expect(m.text).toContain('Manage consent: https://x.example/portal/SVC-REF-ABCD2345?token=t');
  });

  it('defaults to ${SVC_HOME}/mail when MAIL_DIR is unset', async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-home-'));
    const saved = process.env.SVC_HOME;
    process.env.SVC_HOME = home;
    try {
      const mailer = createMailer({ MAIL_FROM: FROM }, log);
      const sent = await mailer.send(msg('ok@example.test', 'evt_HOME'));
      mailer.close();
      expect(sent.file).toBe(path.join(home, 'mail', path.basename(sent.file!)));
      expect(fs.readFileSync(sent.file!, 'utf8')).toContain('Message-ID: <evt_HOME@svc.test>');
    } finally {
      if (saved === undefined) delete process.env.SVC_HOME;
      else process.env.SVC_HOME = saved;
      fs.rmSync(home, { recursive: true, force: true });
    }
  });
});
