import dns, { type LookupAddress, type LookupAllOptions, type LookupOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { Environment } from '../domain/types.js';
import { decideAddress, type AddressPolicy, type Cidr } from '../net/ip.js';

/**
 * SSRF guard. Host names are checked inside the socket's `lookup`, i.e. on the addresses the
 * connection will really use, so a DNS answer that changes between a check and the connect
 * (rebinding) cannot slip through. IP literals never reach `lookup`, so `checkUrl` checks
 * them before connecting.
 */

export interface DestinationPolicy extends AddressPolicy {
  /** Keeps connection pools of different policies apart (a socket is only checked at connect). */
  name: string;
  requireHttps: boolean;
}

export interface GuardConfig {
  allowlist: readonly Cidr[];
  allowLoopbackSandbox: boolean;
}

/**
 * A sandbox app reaches global addresses only, plus loopback when WEBHOOK_ALLOW_LOOPBACK_SANDBOX:
 * WEBHOOK_ALLOWLIST is for live apps, so whoever can set a sandbox app's URL (a console key)
 * cannot reach the operator's private networks.
 */
export function policyFor(env: Environment, g: GuardConfig): DestinationPolicy {
  const sandbox = env === 'sandbox';
  return {
    name: sandbox ? 'sandbox' : 'live',
    allowlist: sandbox ? [] : g.allowlist,
    allowLoopback: sandbox && g.allowLoopbackSandbox,
    requireHttps: !sandbox,
  };
}

export const SSRF_CODE = 'ERR_SSRF_REFUSED';

export class SsrfRefusedError extends Error {
  override readonly name = 'SsrfRefusedError';
  readonly code = SSRF_CODE;
}

export type UrlCheck =
  | { ok: true; url: URL }
  | { ok: false; errorClass: 'invalid_url' | 'ssrf_refused'; message: string };

/** Checks scheme and IP-literal hosts before any connection is made. */
export function checkUrl(raw: string, policy: DestinationPolicy): UrlCheck {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, errorClass: 'invalid_url', message: 'not a valid URL' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    return {
      ok: false,
      errorClass: 'invalid_url',
      message: `scheme ${url.protocol} is not allowed`,
    };
  if (policy.requireHttps && url.protocol !== 'https:')
    return { ok: false, errorClass: 'invalid_url', message: 'live apps need an https URL' };
  if (url.username || url.password)
    return {
      ok: false,
      errorClass: 'invalid_url',
      message: 'credentials in the URL are not allowed',
    };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host)) {
    const d = decideAddress(host, policy);
    if (!d.allowed)
      return { ok: false, errorClass: 'ssrf_refused', message: `${d.category} address refused` };
  }
  return { ok: true, url };
}

type Resolve = (
  hostname: string,
  options: LookupAllOptions,
  callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

const systemResolve: Resolve = (h, o, cb) => dns.lookup(h, o, cb);

/**
 * A `lookup` for net/tls connect that resolves every address and keeps only the allowed
 * ones; when none is left the connect fails with SsrfRefusedError and no socket is opened.
 */
export function guardedLookup(
  policy: AddressPolicy,
  resolve: Resolve = systemResolve,
): LookupFunction {
  return (hostname: string, options: LookupOptions, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const decided = addresses.map((a) => ({ a, d: decideAddress(a.address, policy) }));
      const allowed = decided.filter((x) => x.d.allowed).map((x) => x.a);
      const first = allowed[0];
      if (!first) {
        const cats = [...new Set(decided.map((x) => x.d.category))].join(', ');
        return callback(
          new SsrfRefusedError(`${hostname} resolves to a refused address (${cats})`),
          '',
          0,
        );
      }
      if (options.all) return callback(null, allowed);
      return callback(null, first.address, first.family);
    });
  };
}
