import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  baseConfigSchema,
  ConfigError,
  loadConfig,
  redactConfig,
  wantsEmbeddedStack,
} from './config.js';
import { tuning, tuningNames } from './tuning.js';

const read = (file: string) => fs.readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');

/** Read outside the schema, by the launcher and the embedded stack, in these files. */
const launcherSettings = {
  SVC_ROLE: 'bin/roles.ts',
  SVC_HOME: 'infra/local/paths.ts',
  SVC_KAFKA_PORT: 'bin/process.ts',
  SVC_KAFKA_CONTROLLER_PORT: 'bin/process.ts',
  SVC_DYNAMODB_PORT: 'bin/process.ts',
};

/** The names in the first column of each table row of `text`, and whether its why is given. */
function tableRows(text: string): { names: string[]; why: string }[] {
  return text
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) => {
      const cells = l.split(' | ');
      return {
        names: [...cells[0]!.matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((m) => m[1]!),
        why: (cells[2] ?? '').replace(/\|$/, '').trim(),
      };
    });
}

function section(doc: string, from: string, to: string): string {
  const start = doc.indexOf(from);
  expect(start, from).toBeGreaterThanOrEqual(0);
  const end = doc.indexOf(to, start);
  expect(end, to).toBeGreaterThan(start);
  return doc.slice(start, end);
}

describe('settings and fixed values', () => {
  const settings = [...Object.keys(baseConfigSchema.shape), ...Object.keys(launcherSettings)];
  const doc = read('docs/operations.md');

  it("number at most 50, the launcher's included", () => {
    expect(settings.length).toBeLessThanOrEqual(50);
  });

  it('are each read where the launcher table says', () => {
    for (const [name, file] of Object.entries(launcherSettings)) expect(read(file)).toContain(name);
  });

  it('are exactly those docs/operations.md lists under Settings, each with why to change it', () => {
    const rows = [
      ...tableRows(section(doc, '## Settings', '### Fixed values')),
      ...tableRows(
        section(doc, '### The launcher and the embedded stack', '### Production checks'),
      ),
    ];
    expect(rows.flatMap((r) => r.names).sort()).toEqual([...settings].sort());
    for (const r of rows) expect(r.why.length, r.names.join(', ')).toBeGreaterThan(10);
  });

  it('lists every fixed value under Fixed values, and none is a setting', () => {
    const rows = tableRows(
      section(doc, '### Fixed values', '### The launcher and the embedded stack'),
    );
    expect(rows.flatMap((r) => r.names).sort()).toEqual([...tuningNames].sort());
    for (const name of tuningNames) expect(settings).not.toContain(name);
  });

  it('gives the fixed values their defaults, or the overrides given in code', () => {
    const c = loadConfig({});
    for (const name of tuningNames) expect(c[name]).toBe(tuning[name]);
    const o = loadConfig({}, { OUTBOX_WRITER_STALE_MS: 3_000, KAFKA_CLIENT_ID: 'test-x' });
    expect(o.OUTBOX_WRITER_STALE_MS).toBe(3_000);
    expect(o.KAFKA_CLIENT_ID).toBe('test-x');
    expect(o.OUTBOX_RELAY_INTERVAL_MS).toBe(tuning.OUTBOX_RELAY_INTERVAL_MS);
  });

  it("refuses a fixed value's name in the environment, naming its value", () => {
    expect(() => loadConfig({ OUTBOX_WRITER_STALE_MS: '3000' })).toThrow(ConfigError);
    expect(() =>
      loadConfig({ OUTBOX_WRITER_STALE_MS: '3000', KAFKA_CLIENT_ID: 'mine', PORT: '1' }),
    ).toThrow(
      /OUTBOX_WRITER_STALE_MS \(fixed at 10000\), KAFKA_CLIENT_ID \(fixed at svc-consent\)/,
    );
    // Set empty is unset, as for the settings.
    expect(loadConfig({ OUTBOX_WRITER_STALE_MS: '' }).OUTBOX_WRITER_STALE_MS).toBe(10_000);
  });
});

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

describe('loopback webhooks for sandbox apps', () => {
  const external = { KAFKA_BROKERS: 'b:9092', DYNAMODB_ENDPOINT: 'http://ddb:8000' };
  it.each([
    ['the embedded default', {}, true],
    ['KAFKA_BROKERS and DYNAMODB_ENDPOINT set', external, false],
    ['only AWS_REGION set', { AWS_REGION: 'ap-south-1' }, false],
    ['only DYNAMODB_ENDPOINT set', { DYNAMODB_ENDPOINT: 'http://ddb:8000' }, false],
    ['external, explicitly allowed', { ...external, WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true' }, true],
    ['external, allowed with 1', { ...external, WEBHOOK_ALLOW_LOOPBACK_SANDBOX: '1' }, true],
    ['embedded, explicitly refused', { WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'false' }, false],
    ['external, set empty (as unset)', { ...external, WEBHOOK_ALLOW_LOOPBACK_SANDBOX: '' }, false],
  ])('%s → %s', (_name, env, allowed) => {
    expect(loadConfig(env).WEBHOOK_ALLOW_LOOPBACK_SANDBOX).toBe(allowed);
  });
  it('rejects a value that is not a boolean', () => {
    expect(() => loadConfig({ WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'yes' })).toThrow(
      /WEBHOOK_ALLOW_LOOPBACK_SANDBOX/,
    );
  });
});

describe('NODE_ENV=production', () => {
  const good = {
    NODE_ENV: 'production',
    KAFKA_BROKERS: 'b-1.msk.example:9094',
    AWS_REGION: 'ap-south-1',
    SVC_ADMIN_TOKEN: randomBytes(32).toString('base64url'),
    SVC_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    PUBLIC_BASE_URL: 'https://consent.example.com',
    METRICS_TOKEN: randomBytes(24).toString('base64url'),
  };
  const problem = (env: Record<string, string | undefined>) => {
    try {
      loadConfig(env);
      return undefined;
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).not.toContain('\n');
      return (err as Error).message;
    }
  };

  it('accepts strong settings on external infrastructure', () => {
    const c = loadConfig(good);
    expect(c.WEBHOOK_ALLOW_LOOPBACK_SANDBOX).toBe(false);
    expect(problem({ ...good, WEBHOOK_ALLOWLIST: '10.0.0.0/8, fd00::/8' })).toBeUndefined();
    expect(
      problem({ ...good, AWS_REGION: undefined, DYNAMODB_ENDPOINT: 'https://ddb.example' }),
    ).toBeUndefined();
  });

  it('accepts a keyring (SVC_ENCRYPTION_KEYS) in place of SVC_ENCRYPTION_KEY', () => {
    const keys = `k2:${randomBytes(32).toString('base64')},k1:${randomBytes(32).toString('hex')}`;
    expect(problem({ ...good, SVC_ENCRYPTION_KEY: undefined, SVC_ENCRYPTION_KEYS: keys })).toBe(
      undefined,
    );
    expect(problem({ ...good, SVC_ENCRYPTION_KEYS: keys })).toBeUndefined();
    // Malformed anywhere, weak in production.
    expect(problem({ ...good, NODE_ENV: 'development', SVC_ENCRYPTION_KEYS: 'k1' })).toMatch(
      /SVC_ENCRYPTION_KEYS/,
    );
    expect(
      problem({
        ...good,
        SVC_ENCRYPTION_KEYS: `k2:${'00'.repeat(32)},k1:${good.SVC_ENCRYPTION_KEY}`,
      }),
    ).toMatch(/SVC_ENCRYPTION_KEYS k2 must be 32 random bytes/);
  });

  it('refuses the embedded stack in one line naming what to set', () => {
    const m = problem({ ...good, KAFKA_BROKERS: undefined, AWS_REGION: undefined });
    expect(m).toMatch(/embedded/);
    expect(m).toMatch(/KAFKA_BROKERS/);
    expect(m).toMatch(/AWS_REGION/);
  });

  it.each([
    ['SVC_ADMIN_TOKEN missing', { SVC_ADMIN_TOKEN: undefined }, /SVC_ADMIN_TOKEN/],
    [
      'SVC_ADMIN_TOKEN of 31 characters',
      { SVC_ADMIN_TOKEN: 'k3Jd9sLq0ZxY7wVb2NmT5rPa8cHf4Ue' },
      /SVC_ADMIN_TOKEN/,
    ],
    [
      'SVC_ADMIN_TOKEN of one repeated character',
      { SVC_ADMIN_TOKEN: 'a'.repeat(40) },
      /SVC_ADMIN_TOKEN/,
    ],
    ['SVC_ENCRYPTION_KEY missing', { SVC_ENCRYPTION_KEY: undefined }, /SVC_ENCRYPTION_KEY/],
    ['SVC_ENCRYPTION_KEY not 32 bytes', { SVC_ENCRYPTION_KEY: 'c2hvcnQ=' }, /SVC_ENCRYPTION_KEY/],
    ['SVC_ENCRYPTION_KEY all zero', { SVC_ENCRYPTION_KEY: '00'.repeat(32) }, /SVC_ENCRYPTION_KEY/],
    [
      'SVC_ENCRYPTION_KEY a repeated word',
      { SVC_ENCRYPTION_KEY: 'deadbeef'.repeat(8) },
      /SVC_ENCRYPTION_KEY/,
    ],
    [
      'loopback allowed for sandbox apps',
      { WEBHOOK_ALLOW_LOOPBACK_SANDBOX: 'true' },
      /WEBHOOK_ALLOW_LOOPBACK_SANDBOX/,
    ],
    [
      'loopback in the allowlist',
      { WEBHOOK_ALLOWLIST: '10.0.0.0/8,127.0.0.1' },
      /WEBHOOK_ALLOWLIST/,
    ],
    ['IPv6 loopback in the allowlist', { WEBHOOK_ALLOWLIST: '::1/128' }, /WEBHOOK_ALLOWLIST/],
    ['everything in the allowlist', { WEBHOOK_ALLOWLIST: '0.0.0.0/0' }, /WEBHOOK_ALLOWLIST/],
    ['a bad allowlist', { WEBHOOK_ALLOWLIST: 'ten' }, /WEBHOOK_ALLOWLIST/],
    ['no metrics token (a public /metrics)', { METRICS_TOKEN: undefined }, /METRICS_TOKEN/],
    [
      'a plain-http public URL',
      { PUBLIC_BASE_URL: 'http://consent.example.com' },
      /PUBLIC_BASE_URL/,
    ],
  ])('refuses %s', (_name, change, key) => {
    expect(problem({ ...good, ...change })).toMatch(key);
    // The same settings are accepted outside production.
    expect(problem({ ...good, ...change, NODE_ENV: 'development' })).toBeUndefined();
  });

  it('names every problem at once', () => {
    const m = problem({ NODE_ENV: 'production' });
    for (const key of [
      'KAFKA_BROKERS',
      'SVC_ADMIN_TOKEN',
      'SVC_ENCRYPTION_KEY',
      'METRICS_TOKEN',
      'PUBLIC_BASE_URL',
    ])
      expect(m).toContain(key);
  });
});

describe('TRUST_PROXY', () => {
  it.each([
    [undefined, 'loopback'],
    ['true', true],
    ['false', false],
    ['0', 0],
    ['2', 2],
    ['loopback', 'loopback'],
    ['loopback, uniquelocal', 'loopback,uniquelocal'],
    ['10.0.0.0/8, 192.168.1.7,fd00::/8', '10.0.0.0/8,192.168.1.7,fd00::/8'],
  ])('%s → %s', (value, expected) => {
    expect(loadConfig(value === undefined ? {} : { TRUST_PROXY: value }).TRUST_PROXY).toEqual(
      expected,
    );
  });
  it.each(['', 'yes', '-1', '1.5', '10.0.0.0/33', 'loopback,,10.0.0.1', 'proxy.example'])(
    'rejects %j naming the key',
    (value) => {
      expect(() => loadConfig({ TRUST_PROXY: value })).toThrow(/TRUST_PROXY/);
    },
  );
});
