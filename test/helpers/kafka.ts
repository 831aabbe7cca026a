import type { Kafka, KafkaMessage } from 'kafkajs';

export interface Collected {
  key: string | undefined;
  value: unknown;
  headers: Record<string, string>;
  partition: number;
}

function parse(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw; // a deliberately malformed message stays a string
  }
}

/**
 * Reads a topic from the beginning into an array, for assertions on what was really
 * written to Kafka. `stop()` disconnects.
 */
export async function collectTopic(kafka: Kafka, topic: string) {
  const messages: Collected[] = [];
  const consumer = kafka.consumer({
    groupId: `collector-${topic}-${Date.now()}-${Math.random()}`,
    maxWaitTimeInMs: 50,
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message, partition }: { message: KafkaMessage; partition: number }) => {
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(message.headers ?? {}))
        if (v !== undefined) headers[k] = String(v);
      messages.push({
        key: message.key?.toString(),
        value: parse(message.value?.toString() ?? 'null'),
        headers,
        partition,
      });
    },
  });
  return { messages, stop: () => consumer.disconnect() };
}
