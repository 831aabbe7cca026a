import { describe, expect, it } from 'vitest';
import { BucketMap, TokenBucket, clientAddress, credentialClass } from './ratelimit.js';

describe('TokenBucket', () => {
  it('allows a burst, then refills at the rate', () => {
    const b = new TokenBucket(10, 3, 0);
    expect([b.take(0), b.take(0), b.take(0)]).toEqual([0, 0, 0]);
    expect(b.take(0)).toBe(100); // one token per 100 ms at 10/s
    expect(b.take(50)).toBe(50);
    expect(b.take(100)).toBe(0);
  });
  it('never holds more than the burst', () => {
    const b = new TokenBucket(1000, 2, 0);
    b.take(0);
    expect([b.take(60_000), b.take(60_000), b.take(60_000)]).toEqual([0, 0, 1]);
  });
});

describe('TokenBucket.wait', () => {
  it('reports the wait without taking a token', () => {
    const b = new TokenBucket(1, 1, 0);
    expect(b.wait(0)).toBe(0);
    expect(b.take(0)).toBe(0);
    expect(b.wait(0)).toBe(1000);
    expect(b.wait(400)).toBe(600);
    expect(b.take(1000)).toBe(0);
  });
});

describe('BucketMap', () => {
  it('keeps one bucket per key', () => {
    const m = new BucketMap(1, 2);
    expect([m.take('a', 0), m.take('a', 0), m.take('a', 0)]).toEqual([0, 0, 1000]);
    expect(m.take('b', 0)).toBe(0);
    expect(m.wait('a', 0)).toBe(1000);
    expect(m.wait('never-seen', 0)).toBe(0);
  });

  it('holds at most `max` buckets, dropping the least recently used', () => {
    const m = new BucketMap(1, 1, 3);
    m.take('a', 0);
    m.take('b', 0);
    m.take('c', 0);
    m.take('a', 0); // a is used again: b is now the oldest
    m.take('d', 0);
    expect(m.size).toBe(3);
    expect(m.wait('b', 0)).toBe(0); // dropped: comes back full
    expect(m.wait('a', 0)).toBe(1000);
  });
});

describe('credentialClass', () => {
  it.each([
    [{ via: 'secretKey' }, 'secretKey'],
    [{ via: 'apiKey' }, 'apiKey'],
    [{ via: 'siteKey' }, 'browser'],
    [{ via: 'admin', admin: true }, 'admin'],
    [{}, 'other'],
  ] as const)('%j → %s', (l, cls) => {
    expect(credentialClass(l)).toBe(cls);
  });
});

describe('clientAddress', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:0DB8:0001:0002:abcd::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    [undefined, 'unknown'],
  ])('%s → %s', (ip, want) => {
    expect(clientAddress({ ip } as { ip: string | undefined })).toBe(want);
  });
});
