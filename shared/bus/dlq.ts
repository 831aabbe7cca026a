import type { Kafka, KafkaMessage } from 'kafkajs';
import { headersOf } from './support.js';
import type { OutMessage, Producer } from './producer.js';

/** One dead-lettered message, with where it came from and why. */
export interface DeadLetter {
  offset: string;
  partition: number;
  /** The topic, group, partition and offset it was taken from. */
  source: { topic: string; group: string; partition: string; offset: string };
  code: string;
  reason: string;
  key: string;
  value: string;
  headers: Record<string, string>;
  /** True once `redrive` re-published it. */
  redriven: boolean;
}

/** The consumer group whose committed offsets mark what `redrive` already re-published. */
export const redriveGroup = (prefix: string) => `${prefix}dlq-redrive`;

function toDeadLetter(partition: number, m: KafkaMessage, redrivenBelow: number): DeadLetter {
  const h = headersOf(m);
  return {
    offset: m.offset,
    partition,
    source: {
      topic: h['x-dlq-topic'] ?? '',
      group: h['x-dlq-group'] ?? '',
      partition: h['x-dlq-partition'] ?? '',
      offset: h['x-dlq-offset'] ?? '',
    },
    code: h['x-dlq-code'] ?? '',
    reason: h['x-dlq-reason'] ?? '',
    key: m.key?.toString() ?? '',
    value: m.value?.toString() ?? '',
    headers: h,
    redriven: Number(m.offset) < redrivenBelow,
  };
}

/**
 * Reads the whole dead-letter topic (from its start to the end it has now), without joining
 * any group: partition by partition, with a throw-away consumer assigned by seek.
 */
export async function readDeadLetters(
  kafka: Kafka,
  o: { topic: string; prefix: string; timeoutMs?: number },
): Promise<DeadLetter[]> {
  const admin = kafka.admin();
  await admin.connect();
  let ends: { partition: number; low: number; high: number }[];
  let redriven: Map<number, number>;
  try {
    ends = (await admin.fetchTopicOffsets(o.topic)).map((p) => ({
      partition: p.partition,
      low: Number(p.low),
      high: Number(p.high),
    }));
    const [done] = await admin.fetchOffsets({ groupId: redriveGroup(o.prefix), topics: [o.topic] });
    redriven = new Map(
      (done?.partitions ?? []).map((p) => [p.partition, Math.max(0, Number(p.offset))]),
    );
  } finally {
    await admin.disconnect();
  }
  const wanted = ends.filter((e) => e.high > e.low);
  if (wanted.length === 0) return [];
  const out: DeadLetter[] = [];
  const consumer = kafka.consumer({
    groupId: `${o.prefix}dlq-reader-${process.pid}-${Date.now()}`,
    maxWaitTimeInMs: 100,
  });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: o.topic, fromBeginning: true });
    const left = new Map(wanted.map((e) => [e.partition, e.high]));
    let finish!: () => void;
    const finished = new Promise<void>((r) => (finish = r));
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ partition, message }) => {
        const end = left.get(partition);
        if (end === undefined || Number(message.offset) >= end) return;
        out.push(toDeadLetter(partition, message, redriven.get(partition) ?? 0));
        if (Number(message.offset) >= end - 1) left.delete(partition);
        if (left.size === 0) finish();
      },
    });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      finished,
      new Promise<void>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error('timed out reading the dead-letter topic')),
          o.timeoutMs ?? 30_000,
        );
      }),
    ]).finally(() => clearTimeout(timer));
  } finally {
    await consumer.disconnect();
  }
  return out.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}

/**
 * Re-publishes every dead letter not yet redriven to the topic it came from (headers as they
 * were, minus the dead-letter ones, plus `x-redriven-from`), then records how far it got, so a
 * second run sends nothing twice. Consumers deduplicate by event id in any case.
 */
export async function redriveDeadLetters(
  kafka: Kafka,
  producer: Producer,
  o: { topic: string; prefix: string; code?: string | undefined },
): Promise<{ redriven: DeadLetter[]; skipped: DeadLetter[] }> {
  const all = (await readDeadLetters(kafka, o)).filter((d) => !d.redriven);
  const send = all.filter((d) => d.source.topic && (o.code === undefined || d.code === o.code));
  const skipped = all.filter((d) => !send.includes(d));
  const msgs: OutMessage[] = send.map((d) => ({
    topic: d.source.topic,
    key: d.key,
    value: d.value,
    headers: {
      ...Object.fromEntries(Object.entries(d.headers).filter(([k]) => !k.startsWith('x-dlq-'))),
      'x-redriven-from': `${o.topic}/${d.partition}/${d.offset}`,
    },
  }));
  await producer.send(msgs);
  // Only a run over every code moves the mark; a filtered run leaves the others to a later one.
  if (o.code === undefined && all.length > 0) {
    const admin = kafka.admin();
    await admin.connect();
    try {
      const byPartition = new Map<number, number>();
      for (const d of all)
        byPartition.set(
          d.partition,
          Math.max(byPartition.get(d.partition) ?? 0, Number(d.offset) + 1),
        );
      await admin.setOffsets({
        groupId: redriveGroup(o.prefix),
        topic: o.topic,
        partitions: [...byPartition].map(([partition, offset]) => ({
          partition,
          offset: String(offset),
        })),
      });
    } finally {
      await admin.disconnect();
    }
  }
  return { redriven: send, skipped };
}
