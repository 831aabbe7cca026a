import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from './errors.js';
import type { components } from './openapi.gen.js';

/** Every event the service delivers, discriminated by `type` (the document's `webhooks`). */
export type ConsentEvent = components['schemas']['ConsentEvent'];
export type EventType = ConsentEvent['type'];
/** The event of one type: `EventOf<'consent.withdrawn'>`. */
export type EventOf<T extends EventType> = Extract<ConsentEvent, { type: T }>;

/** A Node `IncomingHttpHeaders`, a Fetch `Headers`, or a plain record. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

export interface VerifyOptions {
  /** How far `webhook-timestamp` may be from now, default 5 minutes (Standard Webhooks). */
  toleranceS?: number;
  nowMs?: number;
}

const header = (h: HeadersLike, name: string): string | undefined => {
  if (typeof (h as Headers).get === 'function') return (h as Headers).get(name) ?? undefined;
  const v = (h as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(v) ? v[0] : v;
};

const bytes = (b: string | Uint8Array) =>
  typeof b === 'string' ? Buffer.from(b, 'utf8') : Buffer.from(b);

/**
 * Verifies a webhook as Standard Webhooks defines it: `webhook-signature` holds a `v1,` base64
 * HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{raw body}`, keyed with the UTF-8 bytes of
 * the app's secret key, and the timestamp is recent. Pass the body exactly as received. Returns
 * the parsed event; throws WebhookVerificationError otherwise.
 */
export function verifyWebhook(
  rawBody: string | Uint8Array,
  headers: HeadersLike,
  secretKey: string,
  o: VerifyOptions = {},
): ConsentEvent {
  const id = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!id || !timestamp || !signatures)
    throw new WebhookVerificationError(
      'missing webhook-id, webhook-timestamp or webhook-signature',
    );
  if (!/^\d+$/.test(timestamp))
    throw new WebhookVerificationError('webhook-timestamp is not Unix seconds');
  const skewS = Math.abs((o.nowMs ?? Date.now()) / 1000 - Number(timestamp));
  if (skewS > (o.toleranceS ?? 300))
    throw new WebhookVerificationError('webhook-timestamp is too old or too new');
  const body = bytes(rawBody);
  const expected = createHmac('sha256', Buffer.from(secretKey, 'utf8'))
    .update(Buffer.concat([Buffer.from(`${id}.${timestamp}.`, 'utf8'), body]))
    .digest();
  const matches = signatures.split(' ').some((s) => {
    const [version, sig] = s.split(',', 2);
    if (version !== 'v1' || !sig) return false;
    const given = Buffer.from(sig, 'base64');
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  if (!matches) throw new WebhookVerificationError('no signature matches');
  let event: unknown;
  try {
    event = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
  const e = event as Partial<ConsentEvent> | null;
  if (
    typeof e?.type !== 'string' ||
    typeof e.data?.consentId !== 'string' ||
    typeof e.data.sequence !== 'number'
  )
    throw new WebhookVerificationError('the body is not a consent event');
  return event as ConsentEvent;
}
