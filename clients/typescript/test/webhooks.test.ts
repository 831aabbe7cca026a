import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { verifyWebhook, WebhookVerificationError } from '../src/index.js';
import vectors from './vectors.json' with { type: 'json' };

/** verifyWebhook on the service's own signatures (test vectors) and on an independent signer's. */
const at = (v: { timestampS: number }) => ({ nowMs: v.timestampS * 1000 });

describe('verifyWebhook', () => {
  it('verifies every test vector the service’s signer made, and returns the event', () => {
    expect(vectors.length).toBeGreaterThan(0);
    for (const v of vectors) {
      const event = verifyWebhook(v.body, v.headers, v.secretKey, at(v));
      expect(event).toEqual(JSON.parse(v.body));
      // The same bytes as a Buffer, as express.raw() hands them over.
      expect(
        verifyWebhook(Buffer.from(v.body), new Headers(v.headers), v.secretKey, at(v)).type,
      ).toBe(event.type);
    }
  });

  it('refuses a vector with its body, signature, id, timestamp or key changed', () => {
    for (const v of vectors) {
      const refused = (body: string, headers: Record<string, string>, key = v.secretKey) =>
        expect(() => verifyWebhook(body, headers, key, at(v))).toThrow(WebhookVerificationError);
      refused(v.body.replace('"sequence":', '"sequence":1'), v.headers);
      refused(`${v.body} `, v.headers);
      refused(v.body, { ...v.headers, 'webhook-id': `${v.headers['webhook-id']}X` });
      refused(v.body, { ...v.headers, 'webhook-timestamp': String(v.timestampS + 1) });
      refused(v.body, {
        ...v.headers,
        'webhook-signature': v.headers['webhook-signature'].replace('v1,', 'v2,'),
      });
      refused(v.body, {
        ...v.headers,
        'webhook-signature': 'v1,' + Buffer.alloc(32).toString('base64'),
      });
      refused(v.body, v.headers, `${v.secretKey}x`);
      const { 'webhook-signature': _s, ...unsigned } = v.headers;
      refused(v.body, unsigned);
    }
  });

  it('refuses a timestamp older or newer than the tolerance', () => {
    const v = vectors[0]!;
    expect(() =>
      verifyWebhook(v.body, v.headers, v.secretKey, { nowMs: (v.timestampS + 301) * 1000 }),
    ).toThrow(/too old/);
    expect(() =>
      verifyWebhook(v.body, v.headers, v.secretKey, { nowMs: (v.timestampS - 301) * 1000 }),
    ).toThrow(/too old or too new/);
    expect(
      verifyWebhook(v.body, v.headers, v.secretKey, { nowMs: (v.timestampS + 299) * 1000 }).type,
    ).toBe('consent.granted');
  });

  it('verifies what the independent standardwebhooks library signs, and refuses it tampered', () => {
    const secretKey = 'svc_sk_test_' + 'Q1w2E3r4T5'.repeat(4);
    const wh = new Webhook(Buffer.from(secretKey), { format: 'raw' });
    const body = vectors[1]!.body;
    const now = new Date();
    const headers = {
      'webhook-id': 'dsp_01KB8Z6S0XJ6Y1V5Q2E7N4M3PZ',
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      'webhook-signature': wh.sign('dsp_01KB8Z6S0XJ6Y1V5Q2E7N4M3PZ', now, body),
    };
    expect(verifyWebhook(body, headers, secretKey).type).toBe('consent.withdrawn');
    // Several signatures (a key rotation): one that matches is enough.
    expect(
      verifyWebhook(
        body,
        { ...headers, 'webhook-signature': `v1,bm9wZQ== ${headers['webhook-signature']}` },
        secretKey,
      ).data.sequence,
    ).toBe(3);
    expect(() => verifyWebhook(body.replace('withdrawn', 'granted'), headers, secretKey)).toThrow(
      WebhookVerificationError,
    );
  });
});
