import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { requireExternalInfra, startProcess } from './host.js';

describe('requireExternalInfra', () => {
  it('accepts a Kafka with a DynamoDB endpoint or an AWS region', () => {
    expect(() =>
      requireExternalInfra({ KAFKA_BROKERS: 'k:9092', DYNAMODB_ENDPOINT: 'http://d:8000' }),
    ).not.toThrow();
    expect(() =>
      requireExternalInfra({ KAFKA_BROKERS: 'k:9092', AWS_REGION: 'ap-south-1' }),
    ).not.toThrow();
  });

  it('refuses in one line a configuration naming neither, or only one of them', () => {
    for (const [c, message] of [
      [{}, /^KAFKA_BROKERS and AWS_REGION \(or DYNAMODB_ENDPOINT\) must be set; /],
      [{ KAFKA_BROKERS: 'k:9092' }, /^DYNAMODB_ENDPOINT or AWS_REGION must be set/],
      [{ AWS_REGION: 'ap-south-1' }, /^KAFKA_BROKERS must be set/],
    ] as const) {
      let err: unknown;
      try {
        requireExternalInfra(c);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(message);
      expect((err as Error).message).not.toContain('\n');
    }
  });
});

describe('startProcess without an infra resolver', () => {
  it('starts nothing on a configuration naming no Kafka and DynamoDB', async () => {
    const r: unknown = await startProcess({
      name: 'host-test',
      services: [],
      workers: [],
      config: loadConfig({}),
      log: createLogger({ level: 'silent' }),
    }).then(
      async (p) => {
        await p.close();
        return p;
      },
      (e: unknown) => e,
    );
    expect(r).toBeInstanceOf(ConfigError);
  });
});
