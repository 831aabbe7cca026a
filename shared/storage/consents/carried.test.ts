import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { creationEvents } from '../../domain/consent/carried.js';
import type { StoredTransaction } from '../../domain/consent/model.js';
import { carriesDerived, deriveCreationMessages, packCreation, toOutboxItem } from './carried.js';

const at = '2025-01-01T00:00:00.000Z';
const txn: StoredTransaction = {
  appId: 'app_x',
  transactionId: '0194a0b0-0000-7000-8000-000000000001',
  referenceId: 'SVC-REF-ABCDEFGH',
  processId: null,
  noticeId: null,
  noticeVersion: null,
  language: null,
  source: 'api',
  createdAt: at,
  updatedAt: at,
  expiresAt: '2026-01-01T00:00:00.000Z',
  records: [{ recordId: 'r1', purpose: 'analytics', state: 'granted', updatedAt: at }],
  version: 1,
  sequence: 2,
  createdBy: { source: 'api', credential: 'k' },
  environment: 'sandbox',
};
const o = { topic: 'topic-x', baseUrl: 'https://svc.example/' };

describe('toOutboxItem', () => {
  it('keys the message by app and principal and carries the event JSON', () => {
    const [e] = creationEvents(txn, 'sandbox', 'https://svc.example');
    expect(toOutboxItem(e!, 'topic-x')).toEqual({
      id: e!.id,
      topic: 'topic-x',
      key: 'app_x:SVC-REF-ABCDEFGH',
      value: JSON.stringify(e),
      createdAtMs: Date.parse(at),
    });
  });
});

describe('a transaction item as the carrier of its creation events', () => {
  it('rebuilds the creation events from the item as created, and nothing from a later version', () => {
    const messages = deriveCreationMessages({ ...txn }, o);
    expect(messages?.map((m) => JSON.parse(m.value).type)).toEqual([
      'consent.created',
      'consent.granted',
    ]);
    expect(messages?.[0]).toMatchObject({ topic: 'topic-x', key: 'app_x:SVC-REF-ABCDEFGH' });
    expect(deriveCreationMessages({ ...txn, version: 2 }, o)).toBeUndefined();
    expect(deriveCreationMessages({ ...txn, environment: undefined }, o)).toBeUndefined();
  });

  it('packs them at the first change of a derived carrier, and only then', () => {
    const derived = { ...txn, obxt: '000000000000001#evt_1' };
    expect(carriesDerived(derived)).toBe(true);
    const packed = packCreation(derived, o);
    const stored = JSON.parse(gunzipSync(packed.obx!).toString('utf8')) as { value: string }[];
    expect(stored.map((m) => m.value)).toEqual(
      deriveCreationMessages(derived, o)!.map((m) => m.value),
    );
    // Packed already, or never a carrier: nothing to add.
    expect(packCreation({ ...derived, obx: packed.obx } as StoredTransaction, o)).toEqual({});
    expect(packCreation(txn, o)).toEqual({});
  });
});
