import { ulid } from 'ulid';
import { z } from 'zod';
import type { Producer } from '../bus/producer.js';
import { getApp, type AppsDeps } from '../domain/apps.js';
import { loadPrincipal, type RepositoryDeps } from '../storage/consents/repository.js';
import { patterns } from '../domain/ids.js';
import { LANGUAGES, type Language } from '../domain/types.js';
import { AppError } from '../errors.js';

/**
 * Messages on the `notifications` topic (e-mails for the notifier worker), keyed by app id.
 * Producers: `requestGrant` below, and the dispatcher when it disables an endpoint.
 */

const email = z.email().max(254);

export const grantRequestSchema = z.object({
  id: z.string().min(1).max(64),
  type: z.literal('grant.request'),
  appId: z.string().regex(patterns.appId),
  referenceId: z.string().regex(patterns.referenceId),
  /** Absent: the principal's stored e-mail address. */
  to: email.optional(),
  /** The e-mail's language; absent: that of the principal's newest transaction, else English. */
  language: z.enum(LANGUAGES).optional(),
  createdAt: z.string().optional(),
});

export const endpointDisabledSchema = z.object({
  id: z.string().min(1).max(64),
  type: z.literal('endpoint.disabled'),
  appId: z.string().regex(patterns.appId),
  to: email,
  reason: z.string().max(200),
  url: z.string().max(2048).optional(),
  disabledAt: z.string().optional(),
});

export const notificationSchema = z.discriminatedUnion('type', [
  grantRequestSchema,
  endpointDisabledSchema,
]);
export type Notification = z.infer<typeof notificationSchema>;
export type GrantRequest = z.infer<typeof grantRequestSchema>;
export type EndpointDisabled = z.infer<typeof endpointDisabledSchema>;

/**
 * What `requestGrant` uses: the app store, the principal's item, and the producer and topic the
 * e-mail goes out on; a Runtime is one.
 */
export interface GrantRequestDeps extends AppsDeps, RepositoryDeps {
  producer: Pick<Producer, 'send'>;
  topics: { notifications: string };
}

export const newNotificationId = () => `ntf_${ulid()}`;

/**
 * Queues an e-mail asking a principal to review and grant consent, with a 'Manage consent'
 * link. The principal must exist; the address is `to` or, when omitted, the stored one.
 */
export async function requestGrant(
  rt: GrantRequestDeps,
  input: { appId: string; referenceId: string; to?: string | undefined; language?: Language },
  now = new Date(),
): Promise<GrantRequest> {
  const app = await getApp(rt, input.appId);
  if (!app) throw new AppError('SVC_NOT_FOUND', 'Unknown app');
  const principal = patterns.referenceId.test(input.referenceId)
    ? await loadPrincipal(rt, app.appId, input.referenceId)
    : undefined;
  if (!principal) throw new AppError('SVC_NOT_FOUND', 'Unknown referenceId');
  if (input.to === undefined && !principal.email)
    throw new AppError('SVC_VALIDATION_FAILED', 'The principal has no e-mail address', {
      errors: [{ path: '/to', message: 'is required: no address is stored for this principal' }],
    });
  const msg = grantRequestSchema.parse({
    id: newNotificationId(),
    type: 'grant.request',
    appId: app.appId,
    referenceId: input.referenceId,
    ...(input.to !== undefined ? { to: input.to } : {}),
    ...(input.language !== undefined ? { language: input.language } : {}),
    createdAt: now.toISOString(),
  });
  await rt.producer.send([
    { topic: rt.topics.notifications, key: app.appId, value: JSON.stringify(msg) },
  ]);
  return msg;
}
