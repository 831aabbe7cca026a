import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { webhookHeaders } from '../../shared/webhooks/signer.js';
import { signatureMatches } from './sandbox.js';

const SECRET = 'svc_sk_test_0123456789abcdefghijABCDEFGHIJ0123456789';
const NOW_S = 1_800_000_000;
const body = '{"id":"evt_1","type":"consent.granted"}';
const signed = (o: { secret?: string; timestampS?: number; body?: string } = {}) =>
  webhookHeaders({
    dispatchId: 'dsp_01JD0000000000000000000000',
    eventType: 'consent.granted',
    attempt: 1,
    timestampS: o.timestampS ?? NOW_S,
    body: o.body ?? body,
    secretKey: o.secret ?? SECRET,
  });

describe('the inbox signature check', () => {
  const table: [string, Record<string, string>, string, boolean][] = [
    ['signed with the secret', signed(), body, true],
    ['another secret', signed({ secret: `${SECRET}x` }), body, false],
    ['another body', signed(), `${body} `, false],
    ['5 minutes old', signed({ timestampS: NOW_S - 300 }), body, true],
    ['older', signed({ timestampS: NOW_S - 301 }), body, false],
    ['from the future', signed({ timestampS: NOW_S + 301 }), body, false],
    [
      'one of several signatures',
      { ...signed(), 'webhook-signature': `v1,AAAA ${signed()['webhook-signature']}` },
      body,
      true,
    ],
    ['no signature', { ...signed(), 'webhook-signature': '' }, body, false],
    ['no id', { ...signed(), 'webhook-id': '' }, body, false],
    ['a timestamp that is no number', { ...signed(), 'webhook-timestamp': 'soon' }, body, false],
  ];
  const rows = table.map(([name, headers, b, valid]) => ({ name, headers, b, valid }));
  it.each(rows)('$name → $valid', ({ headers, b, valid }) => {
    expect(signatureMatches(SECRET, headers, b, NOW_S)).toBe(valid);
  });

  it('agrees with a Standard Webhooks library', () => {
    const h = signed({ timestampS: Math.floor(Date.now() / 1000) });
    expect(() => new Webhook(Buffer.from(SECRET), { format: 'raw' }).verify(body, h)).not.toThrow();
    expect(signatureMatches(SECRET, h, body, Math.floor(Date.now() / 1000))).toBe(true);
  });
});
