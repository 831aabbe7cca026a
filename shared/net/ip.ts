import { isIPv4, isIPv6 } from 'node:net';

/**
 * Pure IP address classification for the SSRF guard: which destinations are globally
 * routable unicast and which are not (IANA special-purpose registries for IPv4 and IPv6).
 * Addresses are handled as BigInt so one CIDR matcher serves both families.
 */

export type IpFamily = 4 | 6;

export interface ParsedIp {
  family: IpFamily;
  value: bigint;
}

export type AddressCategory =
  | 'global'
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link_local'
  | 'cgnat'
  | 'multicast'
  | 'documentation'
  | 'benchmarking'
  | 'reserved';

export interface Cidr {
  family: IpFamily;
  base: bigint;
  prefix: number;
}

function parseV4(s: string): bigint | undefined {
  if (!isIPv4(s)) return undefined;
  return s.split('.').reduce((acc, part) => (acc << 8n) | BigInt(Number(part)), 0n);
}

function parseV6(s: string): bigint | undefined {
  if (!isIPv6(s)) return undefined;
  let text = s;
  // A dotted IPv4 tail ("::ffff:10.0.0.1") stands for the last two groups.
  const tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (tail) {
    const v4 = parseV4(tail[1]!)!;
    text = `${text.slice(0, -tail[1]!.length)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const groupsOf = (x: string) => (x === '' ? [] : x.split(':'));
  const left = groupsOf(head);
  const right = rest === undefined ? [] : groupsOf(rest);
  const fill = rest === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...Array<string>(fill).fill('0'), ...right];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(parseInt(g, 16)), 0n);
}

/** Parses an IPv4 or IPv6 literal (brackets and a zone id are tolerated); undefined if neither. */
export function parseIp(text: string): ParsedIp | undefined {
  const s = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const v4 = parseV4(s);
  if (v4 !== undefined) return { family: 4, value: v4 };
  const v6 = parseV6(s);
  if (v6 !== undefined) return { family: 6, value: v6 };
  return undefined;
}

/** Parses `a.b.c.d/n` or `x::/n` (a bare address is a /32 or /128); throws on bad input. */
export function parseCidr(text: string): Cidr {
  const [addr, len] = text.trim().split('/') as [string, string | undefined];
  const ip = parseIp(addr);
  if (!ip) throw new Error(`not an IP address or CIDR: ${text}`);
  const max = ip.family === 4 ? 32 : 128;
  const prefix = len === undefined ? max : Number(len);
  if (
    !Number.isInteger(prefix) ||
    prefix < 0 ||
    prefix > max ||
    (len !== undefined && !/^\d+$/.test(len))
  )
    throw new Error(`bad prefix length in ${text}`);
  const shift = BigInt(max - prefix);
  return { family: ip.family, base: (ip.value >> shift) << shift, prefix };
}

export function cidrContains(c: Cidr, ip: ParsedIp): boolean {
  if (c.family !== ip.family) return false;
  const shift = BigInt((c.family === 4 ? 32 : 128) - c.prefix);
  return ip.value >> shift === c.base >> shift;
}

const table = (rows: [string, AddressCategory][]) =>
  rows.map(([cidr, category]) => ({ cidr: parseCidr(cidr), category }));

/** IPv4 special-purpose ranges (RFC 6890 and successors); first match wins. */
const V4_RANGES = table([
  ['0.0.0.0/32', 'unspecified'],
  ['0.0.0.0/8', 'reserved'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'cgnat'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link_local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'reserved'],
  ['192.0.2.0/24', 'documentation'],
  ['192.31.196.0/24', 'reserved'],
  ['192.52.193.0/24', 'reserved'],
  ['192.88.99.0/24', 'reserved'],
  ['192.168.0.0/16', 'private'],
  ['192.175.48.0/24', 'reserved'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved'],
]);

/** IPv6 special-purpose ranges inside global unicast 2000::/3; everything outside it is refused. */
const V6_RANGES = table([
  ['2001:db8::/32', 'documentation'],
  ['2001::/23', 'reserved'],
  ['2002::/16', 'reserved'],
  ['3fff::/20', 'documentation'],
]);

const V6_SPECIAL = table([
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  ['64:ff9b:1::/48', 'reserved'],
  ['100::/64', 'reserved'],
  ['fc00::/7', 'private'],
  ['fe80::/10', 'link_local'],
  ['fec0::/10', 'reserved'],
  ['ff00::/8', 'multicast'],
]);

const MAPPED = parseCidr('::ffff:0:0/96');
const NAT64 = parseCidr('64:ff9b::/96');
const GLOBAL_V6 = parseCidr('2000::/3');

/**
 * The IPv4 address an IPv6 address stands for, when it is a mapped (::ffff:a.b.c.d) or a
 * well-known NAT64 (64:ff9b::a.b.c.d) address: these reach the IPv4 host, so it decides.
 */
export function embeddedV4(ip: ParsedIp): ParsedIp | undefined {
  if (ip.family !== 6) return undefined;
  if (cidrContains(MAPPED, ip) || cidrContains(NAT64, ip))
    return { family: 4, value: ip.value & 0xffffffffn };
  return undefined;
}

export function classifyIp(ip: ParsedIp): AddressCategory {
  const v4 = embeddedV4(ip);
  if (v4) return classifyIp(v4);
  if (ip.family === 4) return V4_RANGES.find((r) => cidrContains(r.cidr, ip))?.category ?? 'global';
  const special = V6_SPECIAL.find((r) => cidrContains(r.cidr, ip));
  if (special) return special.category;
  if (!cidrContains(GLOBAL_V6, ip)) return 'reserved';
  return V6_RANGES.find((r) => cidrContains(r.cidr, ip))?.category ?? 'global';
}

export interface AddressPolicy {
  /** Destinations allowed whatever their category (operator configuration). */
  allowlist: readonly Cidr[];
  /** Loopback allowed (sandbox apps in the embedded default). */
  allowLoopback: boolean;
}

export type AddressDecision =
  { allowed: true; category: AddressCategory } | { allowed: false; category: AddressCategory };

/** Whether a resolved address may be connected to under `policy`. */
export function decideAddress(address: string, policy: AddressPolicy): AddressDecision {
  const ip = parseIp(address);
  if (!ip) return { allowed: false, category: 'reserved' };
  const category = classifyIp(ip);
  const v4 = embeddedV4(ip);
  const listed = policy.allowlist.some((c) => cidrContains(c, ip) || (v4 && cidrContains(c, v4)));
  const allowed =
    category === 'global' || listed || (category === 'loopback' && policy.allowLoopback);
  return { allowed, category };
}

/** Parses a comma-separated CIDR list (config); throws naming the bad entry. */
export function parseCidrList(text: string | undefined): Cidr[] {
  return (text ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map(parseCidr);
}
