/**
 * Kafka topics, declared once. Production applies the same list (`applyTopics`), with the
 * replication factor raised by KAFKA_REPLICATION_FACTOR. Names are prefixed per deployment
 * (TOPIC_PREFIX) so several environments or test files can share one cluster.
 */
export interface TopicDef {
  /** Logical name; the Kafka name is `${prefix}${name}`. */
  name: string;
  partitions: number;
  retentionMs: number;
  description: string;
}

const day = 24 * 60 * 60 * 1000;

export const topicDefs = {
  consentEvents: {
    name: 'consent-events',
    partitions: 6,
    retentionMs: 14 * day,
    description:
      'Every consent event (docs/webhooks.md, Events), keyed by appId + referenceId so one principal stays in order',
  },
  postbacks: {
    name: 'postbacks',
    partitions: 6,
    retentionMs: 14 * day,
    description: 'Accepted postbacks on their way to the compliance worker, keyed by dispatchId',
  },
  notifications: {
    name: 'notifications',
    partitions: 2,
    retentionMs: 14 * day,
    description: 'E-mails for the notifier worker',
  },
  deadLetter: {
    name: 'dead-letter',
    partitions: 1,
    retentionMs: 30 * day,
    description:
      'Messages a consumer could not handle after its retries, with the error in headers',
  },
} as const satisfies Record<string, TopicDef>;

export type TopicKey = keyof typeof topicDefs;

export function topicName(prefix: string, key: TopicKey): string {
  return `${prefix}${topicDefs[key].name}`;
}
