import { Webhook } from 'standardwebhooks';
import { describe, expect, it } from 'vitest';
import { vectors } from '../../clients/typescript/scripts/vectors.js';
import recorded from '../../clients/typescript/test/vectors.json' with { type: 'json' };
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

  it('signs the SDK’s test vectors as they are recorded (clients/typescript/test/vectors.json)', () => {
    expect(recorded.length).toBeGreaterThan(0);
    for (const v of recorded)
      expect(
        webhookHeaders({
          dispatchId: v.headers['webhook-id'],
          eventType: v.headers['x-svc-event'],
          attempt: Number(v.headers['x-svc-attempt']),
          timestampS: v.timestampS,
          body: v.body,
          secretKey: v.secretKey,
        }),
        v.name,
      ).toEqual(v.headers);
    // The file is what the script makes now: `npm run sdk:vectors` after a change to the signer.
    expect(vectors()).toEqual(recorded);
  });
});
