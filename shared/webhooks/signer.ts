import { createHmac } from 'node:crypto';

/**
 * Standard Webhooks signing (docs/webhooks.md, Headers and signing): `v1,` + base64 HMAC-SHA256
 * over `{webhook-id}.{webhook-timestamp}.{body}`, keyed with the UTF-8 bytes of the app's secret
 * key, so any Standard Webhooks library verifies it given the secret key as a raw key.
 */
export function sign(secretKey: string, id: string, timestampS: number, body: string): string {
  const mac = createHmac('sha256', Buffer.from(secretKey, 'utf8'))
    .update(`${id}.${timestampS}.${body}`, 'utf8')
    .digest('base64');
  return `v1,${mac}`;
}

export const USER_AGENT = 'svc-webhooks/1';

export interface WebhookRequestParts {
  dispatchId: string;
  eventType: string;
  attempt: number;
  /** Unix seconds of this attempt; signed, so a receiver can reject replays. */
  timestampS: number;
  body: string;
  secretKey: string;
}

/** Every header of one webhook attempt. `webhook-id` is the dispatch id, stable across attempts. */
export function webhookHeaders(p: WebhookRequestParts): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': USER_AGENT,
    'x-svc-dispatch-id': p.dispatchId,
    'x-svc-event': p.eventType,
    'x-svc-attempt': String(p.attempt),
    'webhook-id': p.dispatchId,
    'webhook-timestamp': String(p.timestampS),
    'webhook-signature': sign(p.secretKey, p.dispatchId, p.timestampS, p.body),
  };
}
