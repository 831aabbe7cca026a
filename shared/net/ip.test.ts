import { describe, expect, it } from 'vitest';
import {
  cidrContains,
  classifyIp,
  decideAddress,
  parseCidr,
  parseCidrList,
  parseIp,
  type AddressCategory,
} from './ip.js';

describe('classifyIp', () => {
  const cases: [string, AddressCategory][] = [
    ['8.8.8.8', 'global'],
    ['1.1.1.1', 'global'],
    ['93.184.216.34', 'global'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'reserved'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'cgnat'],
    ['100.127.255.255', 'cgnat'],
    ['100.128.0.0', 'global'],
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['169.254.169.254', 'link_local'],
    ['172.15.255.255', 'global'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['172.32.0.0', 'global'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.10', 'documentation'],
    ['192.88.99.1', 'reserved'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.20.0.0', 'global'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.7', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.1.2.3', 'private'],
    ['::ffff:8.8.8.8', 'global'],
    ['64:ff9b::a9fe:a9fe', 'link_local'],
    ['64:ff9b::808:808', 'global'],
    ['64:ff9b:1::1', 'reserved'],
    ['::127.0.0.1', 'reserved'],
    ['100::1', 'reserved'],
    ['2001:db8::1', 'documentation'],
    ['2001::1', 'reserved'],
    ['2002:7f00:1::1', 'reserved'],
    ['3fff::1', 'documentation'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['fe80::1', 'link_local'],
    ['fe80::1%eth0', 'link_local'],
    ['fec0::1', 'reserved'],
    ['ff02::1', 'multicast'],
    ['2606:4700:4700::1111', 'global'],
    ['2001:4860:4860::8888', 'global'],
    ['4000::1', 'reserved'],
    ['[::1]', 'loopback'],
  ];
  it.each(cases)('%s is %s', (addr, category) => {
    const ip = parseIp(addr);
    expect(ip).toBeDefined();
    expect(classifyIp(ip!)).toBe(category);
  });

  it('rejects text that is not an address', () => {
    for (const bad of ['localhost', '1.2.3', '1.2.3.256', '::g', '', '01.2.3.4x'])
      expect(parseIp(bad)).toBeUndefined();
  });
});

describe('CIDR matching', () => {
  const cases: [string, string, boolean][] = [
    ['10.0.0.0/8', '10.200.1.1', true],
    ['10.0.0.0/8', '11.0.0.0', false],
    ['192.168.1.0/24', '192.168.1.255', true],
    ['192.168.1.0/24', '192.168.2.0', false],
    ['192.168.1.7', '192.168.1.7', true],
    ['192.168.1.7', '192.168.1.8', false],
    ['0.0.0.0/0', '203.0.113.1', true],
    ['0.0.0.0/0', '::1', false],
    ['fd00::/8', 'fd12::1', true],
    ['fd00::/8', 'fe80::1', false],
    ['::/0', '2001:db8::1', true],
    ['10.1.2.3/8', '10.9.9.9', true],
  ];
  it.each(cases)('%s contains %s: %s', (cidr, addr, expected) => {
    expect(cidrContains(parseCidr(cidr), parseIp(addr)!)).toBe(expected);
  });

  it('refuses malformed CIDRs, naming the entry', () => {
    for (const bad of ['10.0.0.0/33', '10.0.0.0/-1', 'fd00::/129', 'example.com/8', '10.0.0.0/8x'])
      expect(() => parseCidr(bad)).toThrow(bad);
    expect(() => parseCidrList('10.0.0.0/8, nope')).toThrow(/nope/);
    expect(parseCidrList(' 10.0.0.0/8 ,, fd00::/8 ')).toHaveLength(2);
    expect(parseCidrList(undefined)).toEqual([]);
  });
});

describe('decideAddress', () => {
  const none = { allowlist: [], allowLoopback: false };
  const sandbox = { allowlist: [], allowLoopback: true };
  const listed = { allowlist: parseCidrList('10.1.0.0/16,fd00::/8'), allowLoopback: false };
  const policies = { none, sandbox, listed };
  const cases: [string, keyof typeof policies, boolean][] = [
    ['8.8.8.8', 'none', true],
    ['127.0.0.1', 'none', false],
    ['::1', 'none', false],
    ['::ffff:127.0.0.1', 'none', false],
    ['127.0.0.1', 'sandbox', true],
    ['::1', 'sandbox', true],
    ['::ffff:127.0.0.1', 'sandbox', true],
    ['10.0.0.1', 'sandbox', false],
    ['169.254.169.254', 'sandbox', false],
    ['10.1.2.3', 'listed', true],
    ['::ffff:10.1.2.3', 'listed', true],
    ['10.2.0.1', 'listed', false],
    ['fd00::5', 'listed', true],
    ['127.0.0.1', 'listed', false],
    ['not-an-ip', 'sandbox', false],
  ];
  it.each(cases)('%s under %s → allowed %s', (addr, policy, allowed) => {
    expect(decideAddress(addr, policies[policy]).allowed).toBe(allowed);
  });
});
