import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { webhookHeaders } from '../../../shared/webhooks/signer.js';

/**
 * Signing test vectors made by the service's own signer (shared/webhooks/signer.ts): the SDK's
 * tests verify them with verifyWebhook, the service's tests sign them again and compare.
 * `npm run sdk:vectors` rewrites test/vectors.json.
 */
export const VECTORS = fileURLToPath(new URL('../test/vectors.json', import.meta.url));

export interface Vector {
  name: string;
  secretKey: string;
  timestampS: number;
  body: string;
  headers: Record<string, string>;
}

const event = (type: string, data: Record<string, unknown>) =>
  JSON.stringify({
    id: 'evt_01KB8Z6S0XJ6Y1V5Q2E7N4M3PR',
    type,
    apiVersion: 'v1',
    createdAt: '2026-11-22T10:00:00.000Z',
    appId: '0193b3c4-1d2e-7f00-8000-0000000000aa',
    environment: 'sandbox',
    data: {
      referenceId: 'SVC-REF-7K2M9Q4T',
      userId: 'user-42',
      consentId: '0193b3c4-1d2e-7f00-8000-000000000001',
      recordIds: ['0193b3c4-1d2e-7f00-8000-000000000101'],
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
      ...data,
    },
  });

export function vectors(): Vector[] {
  const cases = [
    {
      name: 'consent.granted, live key',
      secretKey: 'svc_sk_live_a1B2c3D4e5f6G7h8i9J0k1L2m3N4o5P6',
      body: event('consent.granted', {
        sequence: 2,
        purposes: { marketing: true },
        state: { marketing: 'granted' },
      }),
    },
    {
      name: 'consent.withdrawn with a postback, non-ASCII text',
      secretKey: 'svc_sk_test_Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp',
      body: event('consent.withdrawn', {
        userId: 'ஆஷா-42',
        sequence: 3,
        purposes: { marketing: false },
        state: { marketing: 'withdrawn', विश्लेषण: 'granted' },
        postback: {
          required: true,
          dueAt: '2026-11-22T11:00:00.000Z',
          url: 'http://localhost:8080/api/v1/server/consent/action',
        },
      }),
    },
  ];
  return cases.map((c, i) => {
    const timestampS = 1_795_000_000 + i;
    return {
      ...c,
      timestampS,
      headers: webhookHeaders({
        dispatchId: `dsp_01KB8Z6S0XJ6Y1V5Q2E7N4M3P${i}`,
        eventType: JSON.parse(c.body).type as string,
        attempt: 1 + i,
        timestampS,
        body: c.body,
        secretKey: c.secretKey,
      }),
    };
  });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeFile(VECTORS, `${JSON.stringify(vectors(), null, 2)}\n`);
}
