import { z } from 'zod';
import { envBool } from '../env.js';

/** Kafka and its consumers; unset KAFKA_BROKERS means the embedded local Kafka. */
export const busSettings = {
  KAFKA_BROKERS: z.string().optional(),
  KAFKA_SSL: envBool,
  KAFKA_SASL_MECHANISM: z.enum(['plain', 'scram-sha-256', 'scram-sha-512']).optional(),
  KAFKA_SASL_USERNAME: z.string().optional(),
  KAFKA_SASL_PASSWORD: z.string().optional(),
  KAFKA_REPLICATION_FACTOR: z.coerce.number().int().min(1).default(1),
  TOPIC_PREFIX: z.string().default('svc.'),
};
