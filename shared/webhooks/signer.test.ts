import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { webhookHeaders } from './signer.js';

const secretKey = 'svc_sk_test_' + 'a1B2c3D4e5'.repeat(4);
const body = JSON.stringify({ id: 'evt_1', type: 'consent.granted', data: { n: 'ü' } });

describe('webhook signer', () => {
  it('is verified by the standardwebhooks library with the secret key as a raw key', () => {
    const timestampS = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders({
      dispatchId: 'dsp_01J0000000000000000000000A',
      eventType: 'consent.granted',
      attempt: 3,
      timestampS,
      body,
      secretKey,
    });
    expect(new Webhook(Buffer.from(secretKey), { format: 'raw' }).verify(body, headers)).toEqual(
      JSON.parse(body),
    );
    expect(headers).toMatchObject({
      'x-svc-dispatch-id': 'dsp_01J0000000000000000000000A',
      'webhook-id': 'dsp_01J0000000000000000000000A',
      'x-svc-event': 'consent.granted',
      'x-svc-attempt': '3',
      'webhook-timestamp': String(timestampS),
      'user-agent': 'svc-webhooks/1',
      'content-type': 'application/json',
    });
  });

  it('fails verification with another key, another body or another timestamp', () => {
    const timestampS = Math.floor(Date.now() / 1000);
    const parts = { dispatchId: 'dsp_x', eventType: 'e', attempt: 1, timestampS, body, secretKey };
    const headers = webhookHeaders(parts);
    const other = new Webhook(Buffer.from(`${secretKey}x`), { format: 'raw' });
    expect(() => other.verify(body, headers)).toThrow();
    const wh = new Webhook(Buffer.from(secretKey), { format: 'raw' });
    expect(() => wh.verify(`${body} `, headers)).toThrow();
    expect(() =>
      wh.verify(body, { ...headers, 'webhook-timestamp': String(timestampS + 1) }),
    ).toThrow();
  });
});
