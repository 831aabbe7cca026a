import type { Rng } from './rng.js';
import { randomText } from './hostile.js';
import { isoTime, stringify, type Hint, type Json, type Schema } from './values.js';
import { pickOr, principalOf, type Ctx } from './context.js';

/** Request bodies: values for named fields from the world, and breakage at the byte level. */

export function bodyHint(c: Ctx, dispatchRef: string | undefined): Hint {
  return (name, schema: Schema, rng) => {
    const mine = c.clean || !rng.chance(0.12);
    const odd = (p: number) => !c.clean && rng.chance(p);
    const t = mine ? c.X : c.Y;
    const p = mine ? c.P : principalOf(rng, c.Y);
    if (name === 'translations.key') return rng.pick(['en', 'hi', 'ta', 'xx', '__proto__']);
    if (name === 'purposes.key' || name === 'consents.key')
      return rng.chance(0.9)
        ? rng.pick(t.purposes)
        : rng.pick(['constructor', 'undeclared', '__proto__']);
    if (schema.type === 'array' || schema.type === 'object' || schema.anyOf) return undefined;
    switch (name) {
      case 'referenceId':
        return dispatchRef && mine ? dispatchRef : p?.referenceId;
      case 'dispatchId': {
        const ds = t.dispatches.filter((d) => d.postbackRequired);
        return ds.length > 0 ? rng.pick(ds).dispatchId : t.dispatches[0]?.dispatchId;
      }
      case 'userId':
        return rng.chance(0.6) ? `fz-new-${rng.hex(8)}` : p?.userId;
      case 'email':
      case 'contactEmail':
        return `fz-${rng.hex(6)}@fuzz.example`;
      case 'consentId':
        return pickOr(rng, t.captures, undefined);
      case 'transactionIds':
        return p && p.transactionIds.length > 0 ? rng.pick(p.transactionIds) : undefined;
      case 'recordIds':
        return p && p.recordIds.length > 0 ? rng.pick(p.recordIds) : undefined;
      case 'siteKey':
        return t.siteKey;
      case 'processId':
        return t.triggerKeys[0];
      case 'triggerKey':
        return odd(0.2) ? c.X.triggerKeys[0] : `fz_${rng.hex(6)}`;
      case 'webhookUrl':
        return !odd(0.15)
          ? c.world.receiverUrl
          : rng.pick([
              'http://169.254.169.254/latest/meta-data',
              'https://example.com/hook',
              'ftp://x',
              'http://[::1]:9/',
            ]);
      case 'allowedOrigins':
        return !odd(0.15) ? c.X.origin : rng.pick(['https://evil.example', 'null', c.Y.origin]);
      case 'portalUrlTemplate':
        return `https://portal.fuzz.example/{referenceId}?t=${rng.hex(3)}`;
      case 'environment':
        return odd(0.3) ? 'live' : 'sandbox';
      case 'pageUrl':
        return `${c.X.origin}/p/${rng.hex(4)}`;
      case 'completedAt':
      case 'since':
        return isoTime(rng);
      case 'name':
        return schema.pattern ? undefined : randomText(rng, rng.range(1, 30));
      case 'remark':
      case 'title':
      case 'body':
      case 'label':
      case 'description':
        return randomText(rng, rng.range(1, 30));
      default:
        return undefined;
    }
  };
}

export const CONTENT_TYPES = [
  undefined,
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/problem+json',
  'application/vnd.api+json',
  'application/json, text/plain',
  '*/*',
  'application/json; charset="utf-8"; x=y',
];

export function textMutation(text: string, rng: Rng, notes: string[]): Buffer {
  const m = rng.pick([
    'duplicate-key',
    'truncated',
    'trailing-garbage',
    'bom',
    'single-quotes',
    'comment',
    'nan',
    'invalid-utf8',
    'raw-control',
    'empty',
    'primitive',
    'deep-text',
    'oversize',
  ] as const);
  notes.push(`body text: ${m}`);
  switch (m) {
    case 'duplicate-key': {
      const k = /^\{"((?:[^"\\]|\\.)*)"/.exec(text)?.[1] ?? 'referenceId';
      const dup = `"${k}":${stringify(rng.pick<Json>([null, 1, 'x', '__proto__', {}, []]))}`;
      return Buffer.from(
        text.startsWith('{') && text.length > 2
          ? rng.chance(0.5)
            ? `{${dup},${text.slice(1)}`
            : `${text.slice(0, -1)},${dup}}`
          : `{${dup},${dup}}`,
      );
    }
    case 'truncated':
      return Buffer.from(text.slice(0, rng.int(Math.max(1, text.length))));
    case 'trailing-garbage':
      return Buffer.from(text + rng.pick([',', '}', ' garbage', '\u0000', '\n\n{}']));
    case 'bom':
      return Buffer.from(`\ufeff${text}`);
    case 'single-quotes':
      return Buffer.from(text.replace(/"/g, "'"));
    case 'comment':
      return Buffer.from(`/*x*/${text}`);
    case 'nan':
      return Buffer.from(
        /\d+/.test(text)
          ? text.replace(
              /\d+(\.\d+)?/,
              rng.pick(['NaN', 'Infinity', '-Infinity', '0x10', '1e999', '01']),
            )
          : `{"a":NaN}`,
      );
    case 'invalid-utf8':
    case 'raw-control': {
      const at = text.indexOf('"') + 1;
      const bad =
        m === 'invalid-utf8'
          ? Buffer.from(
              rng.pick([
                [0xff],
                [0xc3, 0x28],
                [0xed, 0xa0, 0x80],
                [0xf4, 0x90, 0x80, 0x80],
                [0xc0, 0xaf],
              ]),
            )
          : Buffer.from(rng.pick(['\u0000', '\n', '\u001f']));
      const buf = Buffer.from(text);
      const cut = Buffer.from(text.slice(0, Math.max(0, at))).length;
      return Buffer.concat([buf.subarray(0, cut), bad, buf.subarray(cut)]);
    }
    case 'empty':
      return Buffer.alloc(0);
    case 'primitive':
      return Buffer.from(rng.pick(['null', '"x"', '1', 'true', '""', '-0']));
    case 'deep-text': {
      const d = rng.pick([1_000, 10_000, 30_000]);
      return Buffer.from(
        rng.chance(0.5)
          ? `${'['.repeat(d)}${']'.repeat(d)}`
          : `${'{"a":'.repeat(d / 5)}1${'}'.repeat(d / 5)}`,
      );
    }
    case 'oversize':
      return Buffer.from(`{"pad":"${'a'.repeat(rng.range(66_000, 200_000))}"}`);
  }
}
