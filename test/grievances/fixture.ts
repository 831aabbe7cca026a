import type { ParsedMail } from 'mailparser';
import { ledgerService } from '../../services/ledger/index.js';
import { createNotifierWorker } from '../../workers/notifier/index.js';
import { createTimersWorker } from '../../workers/timers/index.js';
import { addresses, startSmtp } from '../mail/smtp.js';
import { startPortalStack } from '../portal/fixture.js';

/**
 * The stack of the grievance and breach tests: the admin, record, public, portal and ledger APIs
 * with the notifier (mailing a real SMTP server) and the timers worker, whose clock a test may
 * move ahead of the wall clock (`skew`) to reach a deadline it computed.
 */
export async function startDutyStack(name: string) {
  const smtp = await startSmtp({ user: 'mailer', pass: 'pw' });
  let skewMs = 0;
  const s = await startPortalStack(name, {
    services: [ledgerService],
    workers: [createNotifierWorker(), createTimersWorker({ now: () => Date.now() + skewMs })],
    env: {
      SMTP_URL: smtp.url,
      MAIL_FROM: 'Consent <consent@svc.test>',
      TIMER_SWEEP_INTERVAL_MS: '100',
      EXPIRY_SWEEP_INTERVAL_MS: '100',
      DUTY_SWEEP_INTERVAL_MS: '100',
      COMPLIANCE_GAUGE_INTERVAL_MS: '200',
    },
  });

  async function call(
    method: string,
    path: string,
    headers: Record<string, string>,
    body?: unknown,
  ) {
    const r = await fetch(`${s.url}${path}`, {
      method,
      headers: {
        ...headers,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    return {
      status: r.status,
      headers: Object.fromEntries(r.headers) as Record<string, string | undefined>,
      // eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are asserted field by field
      body: (text ? JSON.parse(text) : undefined) as any,
    };
  }

  return {
    s,
    call,
    /** The admin token's header, for calls expected to fail. */
    admin: () => ({ authorization: `Bearer ${s.p.rt.config.SVC_ADMIN_TOKEN ?? ''}` }),
    /** Moves the timers worker's clock so that it reads `atMs` now. */
    skewTo: (atMs: number) => (skewMs = atMs - Date.now()),
    mailsTo: (address: string, subject: RegExp): ParsedMail[] =>
      smtp.received.filter(
        (m) => addresses(m.to).includes(address) && subject.test(m.subject ?? ''),
      ),
    /** The value of one series of a metric of the process (0 when absent). */
    async metric(metricName: string, labels: Record<string, string>) {
      const m = await s.p.rt.registry.getSingleMetric(metricName)?.get();
      const v = m?.values.find((x) => Object.entries(labels).every(([k, y]) => x.labels[k] === y));
      return v?.value ?? 0;
    },
    async close() {
      await s.close();
      await smtp.close();
    },
  };
}

export type DutyStack = Awaited<ReturnType<typeof startDutyStack>>;
