import type { Rng } from './rng.js';

/** Hostile inputs: strings and numbers that have broken parsers, stores, loggers and renderers. */

export const PROTO_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

/** Strings that have broken parsers, stores, loggers and renderers before. */
export const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udfff',
  'x\ud83dy',
  '\udc00\ud800',
  '\u202egnp.exe',
  '\u200f\u05e9\u05dc\u05d5\u05dd',
  '\u0645\u0631\u062d\u0628\u0627',
  '\ufeff',
  'e\u0301',
  '\u00e9',
  '\ud83d\ude00\ud83d\udc68\u200d\ud83d\udc69\u200d\ud83d\udc67',
  '\u0085\u2028\u2029',
  '\r\n',
  '\t',
  '\u001b[31m',
  '\uffff',
  '\ufffd',
  "'; DROP TABLE apps; --",
  '<script>alert(1)</script>',
  '../../etc/passwd',
  '%00',
  '%2e%2e%2f',
  '{{7*7}}',
  '${jndi:ldap://x}',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__defineGetter__',
  'null',
  'undefined',
  'NaN',
  '-1',
  '0',
  '1e309',
  'true',
  '[]',
  '{}',
  '\\',
  '"',
  '#',
  '?',
  '/',
  '.',
  '..',
  'SVC-REF-00000000',
  'SVC-REF-IIIIIIII',
  'dsp_00000000000000000000000000',
  'app_00000000000000000000',
  'APP_000000000000000000000000',
  'svc_sk_test_0000000000000000000000000000000000000000',
  'svc_ak_0000000000000000000000000000000000000000',
  'svc_pt_e30.AAAA',
  '00000000-0000-0000-0000-000000000000',
];

export const EDGE_NUMBERS: readonly number[] = [
  0,
  -0,
  -1,
  1.5,
  0.1,
  2 ** 31,
  2 ** 53,
  2 ** 53 + 2,
  -(2 ** 53),
  1e308,
  -1e308,
  5e-324,
  Number.MAX_VALUE,
];

/** A hostile string, sometimes long, sometimes hostile parts glued together. */
export function hostileString(rng: Rng): string {
  const r = rng.next();
  if (r < 0.6) return rng.pick(HOSTILE_STRINGS);
  if (r < 0.8) return rng.pick(HOSTILE_STRINGS) + randomText(rng, rng.range(1, 20));
  if (r < 0.95)
    return rng.pick(['a', '\u00e9', '\ud83d\ude00', '\u0000', 'A']).repeat(rng.range(100, 5_000));
  return 'x'.repeat(rng.range(60_000, 70_000));
}

/** Random text over a mixed alphabet (ASCII, Devanagari, RTL, emoji). */
export function randomText(rng: Rng, n: number): string {
  const parts = [
    'a',
    'Z',
    '0',
    ' ',
    '-',
    '_',
    '\u0939',
    '\u093f',
    '\u05d0',
    '\u0627',
    '\ud83d\ude00',
    '\u00e9',
    '.',
  ];
  let s = '';
  for (let i = 0; i < n; i++) s += rng.pick(parts);
  return s;
}
