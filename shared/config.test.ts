import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, redactConfig, wantsEmbeddedStack } from './config.js';

describe('loadConfig', () => {
  it('has sensible defaults', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.BODY_LIMIT_BYTES).toBe(65536);
    expect(wantsEmbeddedStack(c)).toBe(true);
  });
  it('uses external infrastructure when named', () => {
    expect(
      wantsEmbeddedStack(loadConfig({ KAFKA_BROKERS: 'b:9092', AWS_REGION: 'ap-south-1' })),
    ).toBe(false);
  });
  it('rejects bad values with the key named', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ DYNAMODB_ENDPOINT: 'not a url' })).toThrow(/DYNAMODB_ENDPOINT/);
  });
  it('redacts secrets', () => {
    const r = redactConfig(
      loadConfig({ SVC_ADMIN_TOKEN: 'a'.repeat(20), KAFKA_SASL_PASSWORD: 'p' }),
    );
    expect(r.SVC_ADMIN_TOKEN).toBe('[redacted]');
    expect(r.KAFKA_SASL_PASSWORD).toBe('[redacted]');
  });
});
