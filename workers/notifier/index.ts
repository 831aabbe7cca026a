import { runtimeConsumer } from '../../shared/bus/consumer.js';
import { createMailer, type Mailer } from '../../shared/mail/index.js';
import type { WorkerModule } from '../../shared/module.js';
import type { Runtime } from '../../shared/runtime.js';
import { consentEventsHandler } from './consent-events.js';
import { CONSUMER, emailCounter } from './deliver.js';
import { notificationsHandler } from './notifications.js';

export interface NotifierOptions {
  /** Defaults to the mailer SMTP_URL / MAIL_DIR describe. */
  mailer?: (rt: Runtime) => Mailer;
  now?: () => Date;
}

/**
 * E-mails (docs/api.md, E-mails): grant requests, expiry reminders and erasure acknowledgements to
 * data principals, each with a 'Manage consent' link; endpoint-disabled notices to the app.
 */
export function createNotifierWorker(o: NotifierOptions = {}): WorkerModule {
  return {
    name: 'notifier',
    async start(rt) {
      const log = rt.log.child({ worker: 'notifier' });
      const mailer = o.mailer?.(rt) ?? createMailer(rt.config, log);
      const deps = {
        rt,
        mailer,
        now: o.now ?? (() => new Date()),
        count: emailCounter(rt.registry),
      };
      const runner = runtimeConsumer(rt, {
        name: CONSUMER,
        handlers: {
          [rt.topics.consentEvents]: consentEventsHandler(deps),
          [rt.topics.notifications]: notificationsHandler(deps),
        },
        log,
      });
      let stopped: Promise<void> | undefined;
      const stop = () =>
        (stopped ??= (async () => {
          await runner.stop();
          mailer.close();
        })());
      try {
        await runner.start();
      } catch (err) {
        await stop();
        throw err;
      }
      log.info({ mail: mailer.kind }, 'notifier started');
      return { stop };
    },
  };
}

export const notifierWorker: WorkerModule = createNotifierWorker();
