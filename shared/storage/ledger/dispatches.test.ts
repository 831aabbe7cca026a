import { describe, expect, it } from 'vitest';
import { creationEventIds, newEventId, patterns } from '../../domain/ids.js';
import {
  attemptSk,
  dispatchIdFor,
  dispatchItem,
  foundThroughConsent,
  webhookEndpoint,
  type DispatchState,
} from './dispatches.js';

describe('dispatchIdFor', () => {
  const eventId = 'evt_01J9Z8Q6W5E4R3T2Y1U0I9O8P7'.replace(/[IOU]/g, 'A');
  it('is a dsp_ ULID carrying the event time, stable for one event and endpoint', () => {
    const id = dispatchIdFor(eventId, 'app_x:webhook');
    expect(id).toMatch(patterns.dispatchId);
    expect(id.slice(4, 14)).toBe(eventId.slice(4, 14));
    expect(dispatchIdFor(eventId, 'app_x:webhook')).toBe(id);
  });

  it('differs per endpoint and per event', () => {
    const id = dispatchIdFor(eventId, 'app_x:webhook');
    expect(dispatchIdFor(eventId, 'app_y:webhook')).not.toBe(id);
    expect(dispatchIdFor(`${eventId.slice(0, -1)}B`, 'app_x:webhook')).not.toBe(id);
  });

  it('numbers attempts so they sort in order', () => {
    expect([attemptSk(10), attemptSk(2), attemptSk(1)].sort()).toEqual([
      'ATT#001',
      'ATT#002',
      'ATT#010',
    ]);
  });
});

describe('foundThroughConsent', () => {
  const appId = 'app_x';
  const consentId = '0193b3c2-5f00-7000-8000-000000000000';
  const createdAt = '2026-11-28T10:00:00.000Z';
  const state = (eventId: string, o: { consentId?: string; dispatchId?: string } = {}) =>
    ({
      appId,
      referenceId: 'SVC-REF-ABCDEFGH',
      createdAt,
      dispatchId: o.dispatchId ?? dispatchIdFor(eventId, webhookEndpoint(appId)),
      body: JSON.stringify({
        id: eventId,
        type: 'consent.granted',
        createdAt,
        data: { consentId: o.consentId ?? consentId },
      }),
    }) as DispatchState;
  const created = creationEventIds(consentId, Date.parse(createdAt));

  it('holds for each of a transaction’s creation event ids at the app’s webhook', () => {
    expect(created).toHaveLength(4);
    for (const id of created) expect(foundThroughConsent(state(id))).toBe(true);
  });

  it('does not for any other event, another transaction, another endpoint or a body it cannot read', () => {
    expect(foundThroughConsent(state(newEventId()))).toBe(false);
    expect(
      foundThroughConsent(state(created[0]!, { consentId: consentId.replace(/0$/, '1') })),
    ).toBe(false);
    expect(
      foundThroughConsent(
        state(created[0]!, { dispatchId: dispatchIdFor(created[0]!, 'app_x:other') }),
      ),
    ).toBe(false);
    expect(foundThroughConsent({ ...state(created[0]!), body: '{not json' })).toBe(false);
    expect(foundThroughConsent({ ...state(created[0]!), body: 'null' })).toBe(false);
  });

  it('leaves the principal-index keys out only for those', () => {
    const derived = state(created[1]!);
    const other = state(newEventId());
    expect(dispatchItem(derived)).not.toHaveProperty('gsi2pk');
    expect(dispatchItem(derived)).not.toHaveProperty('gsi2sk');
    expect(dispatchItem(other)).toMatchObject({
      gsi2pk: `APP#${appId}#REF#SVC-REF-ABCDEFGH`,
      gsi2sk: `${createdAt}#${other.dispatchId}`,
    });
    for (const s of [derived, other])
      expect(dispatchItem(s)).toMatchObject({ gsi1pk: `APP#${appId}`, sk: 'DSP' });
  });
});
