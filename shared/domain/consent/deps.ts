import type { BaseConfig } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { AppsDeps } from '../apps.js';
import type { NoticesDeps } from '../notices.js';
import type { ConsentStore } from './store.js';
import type { SweepStores } from './sweep-ports.js';

/**
 * What the consent operations take of the process that runs them: the stores behind the
 * domain's ports, the log, the settings, and where a notification is sent. The composition
 * root's runtime is one; a test can build its own.
 */
export interface ConsentDeps extends AppsDeps, NoticesDeps {
  consents: ConsentStore;
  sweeps: SweepStores;
  log: Logger;
  config: BaseConfig;
  producer: { send(messages: { topic: string; key?: string; value: string }[]): Promise<unknown> };
  topics: { notifications: string };
}
