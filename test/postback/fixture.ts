import { TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { createApp } from '../../shared/domain/apps.js';
import type { ConsentEvent, EventType } from '../../shared/domain/consent/events.js';
import { postbackDueAt } from '../../shared/domain/consent/events.js';
import { newEventId, newReferenceId, uuidv7 } from '../../shared/domain/ids.js';
import { dueEntry } from '../../shared/storage/timers/due.js';
import { newDispatchItems } from '../../shared/storage/ledger/dispatches.js';
import type { Runtime } from '../../shared/runtime.js';

/** Test data for the postback API: apps, and dispatches written with the ledger's own functions. */

export const ENCRYPTION_KEY = Buffer.alloc(32, 9).toString('base64');

export function postbackApp(rt: Runtime, name = 'postback test') {
  return createApp(rt, {
    name,
    environment: 'sandbox',
    webhookUrl: 'http://127.0.0.1:9/hooks',
    allowedOrigins: ['https://shop.example'],
    contactEmail: 'ops@shop.example',
  });
}

export function consentEvent(appId: string, type: EventType, now = new Date()): ConsentEvent {
  const dueAt = postbackDueAt(type, now, 1);
  return {
    id: newEventId(),
    type,
    apiVersion: 'v1',
    createdAt: now.toISOString(),
    appId,
    environment: 'sandbox',
    data: {
      referenceId: newReferenceId(),
      userId: null,
      consentId: uuidv7(),
      sequence: 1,
      recordIds: [uuidv7()],
      purposes: { marketing: type === 'consent.granted' },
      state: { marketing: type === 'consent.granted' ? 'granted' : 'withdrawn' },
      noticeId: null,
      noticeVersion: null,
      expiresAt: null,
      ...(dueAt
        ? { postback: { required: true as const, dueAt, url: 'http://localhost/postback' } }
        : {}),
    },
  };
}

/**
 * Stores a dispatch of `type` for `appId`, as the dispatcher would when it takes the event.
 * Its retry entry is a year away, so no sweeper in another test file ever attempts it.
 */
export async function storeDispatch(rt: Runtime, appId: string, type: EventType) {
  const event = consentEvent(appId, type);
  const nowMs = Date.now();
  const created = newDispatchItems(rt, {
    event,
    body: JSON.stringify(event),
    endpoint: 'http://127.0.0.1:9/hooks',
    nowMs,
    due: (id) => dueEntry(id, appId, nowMs + 365 * 86_400_000, 'attempt', 1),
  });
  await rt.dynamo.doc.send(new TransactWriteCommand({ TransactItems: created.items }));
  return { dispatchId: created.state.dispatchId, referenceId: event.data.referenceId, event };
}
