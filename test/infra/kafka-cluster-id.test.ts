import { describe, expect, it } from 'vitest';
import { clusterId } from '../../infra/local/kafka.js';

describe('the embedded Kafka cluster id', () => {
  it('is 16 random bytes in base64url, never starting with "-" (kafka-storage would take it for an option)', () => {
    // With a plain draw, one id in 64 starts with "-": 20,000 draws all pass that by chance
    // with a probability of about 1e-137.
    const ids = Array.from({ length: 20_000 }, clusterId);
    for (const id of ids) {
      expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
      expect(Buffer.from(id, 'base64url')).toHaveLength(16);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });
});
