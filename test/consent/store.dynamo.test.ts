import { randomBytes } from 'node:crypto';
import { consentEventSchema, type ConsentEvent } from '../../shared/domain/consent/events.js';
import { DynamoConsentStore } from '../../shared/storage/consents/store.js';
import { ensureFamily } from '../../shared/storage/timers/due.js';
import { collectTopic } from '../helpers/kafka.js';
import { testRuntime } from '../helpers/stack.js';
import { consentStoreConformance } from './store.conformance.js';

/**
 * The conformance suite on the DynamoDB adapter, on DynamoDB Local, its events read back from
 * the real Kafka. Each app gets a reference key of its own, as the app store would give it.
 */
consentStoreConformance('DynamoDB', async () => {
  const rt = await testRuntime('consent-store-conformance');
  const collector = await collectTopic(rt.kafka, rt.topics.consentEvents);
  const keys = new Map<string, Buffer>();
  const store = new DynamoConsentStore({
    ...rt,
    referenceKey: async (appId) => {
      let key = keys.get(appId);
      if (!key) keys.set(appId, (key = randomBytes(32)));
      return key;
    },
    ensureTimers: (nowMs) => ensureFamily(rt, 'expiry', rt.config.TIMER_SHARDS, nowMs),
  });
  return {
    store,
    appId: () => `app_${randomBytes(6).toString('hex')}`,
    eventsOf: (referenceId: string): ConsentEvent[] =>
      collector.messages
        .map((m) => consentEventSchema.parse(m.value))
        .filter((e) => e.data.referenceId === referenceId),
    async close() {
      await collector.stop();
      await rt.close();
    },
  };
});
