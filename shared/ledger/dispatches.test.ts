import { describe, expect, it } from 'vitest';
import { patterns } from '../domain/ids.js';
import { attemptSk, dispatchIdFor } from './dispatches.js';

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
