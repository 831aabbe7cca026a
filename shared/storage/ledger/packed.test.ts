import { deflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { DISPATCH_VIEW_ATTRS } from '../../../infra/definitions/tables.js';
import type { ConsentEvent } from '../../domain/consent/events.js';
import { itemBytes } from '../billing.js';
import { creationOf, dispatchItem, newDispatchState, toDispatch } from './dispatches.js';
import { checkChain } from '../../ledger/evidence.js';
import { chainHash, sha256Hex } from '../../domain/ledger/hash.js';
import { PACKED_ATTR, impliedFields, packDispatch, unpackDispatch as unpackAny } from './packed.js';

type Item = Record<string, unknown>;
const unpackDispatch = (i: Item): Item => unpackAny(i);
const creation = (i: Item) => creationOf(i) as unknown as Item;

const at = '2026-11-28T10:14:03.558Z';

/** A two-purpose consent's `consent.granted`, as the record API publishes it. */
function event(o: { userId?: string; postback?: boolean } = {}): ConsentEvent {
  return {
    id: 'evt_01M8GTBK165Q97KMPPM8KQKAVF',
    type: 'consent.granted',
    apiVersion: 'v1',
    createdAt: at,
    appId: 'app_guaH36xUertUtQD4mCwb',
    environment: 'production',
    data: {
      referenceId: 'SVC-REF-HPTKRZAR',
      userId: o.userId ?? 'user-1795860843502',
      consentId: '01a221a5-cc26-748b-bb7f-8db53c7d5800',
      sequence: 2,
      recordIds: ['01a221a5-cc26-748b-bb7f-8db53c7d5801', '01a221a5-cc26-748b-bb7f-8db53c7d5802'],
      purposes: { analytics: true, marketing: true },
      state: { analytics: 'granted', marketing: 'granted' },
      noticeId: null,
      noticeVersion: null,
      expiresAt: '2027-11-28T10:14:03.558Z',
      ...(o.postback ? { postback: { required: true, dueAt: '2026-11-29T10:14:03.558Z' } } : {}),
    },
  } as unknown as ConsentEvent;
}

/** The item the dispatcher writes for a first attempt that was delivered (attempts.ts). */
function firstAttemptItem(
  o: { destination?: string; postback?: boolean; response?: string } = {},
): Record<string, unknown> {
  const e = event(o);
  const state = newDispatchState({
    event: e,
    body: JSON.stringify(e),
    endpoint: 'ep_1',
    nowMs: Date.parse(at) + 300,
  });
  const body = {
    type: 'attempt',
    dispatchId: state.dispatchId,
    attempt: 1,
    trigger: 'first',
    time: '2026-11-28T10:14:04.122Z',
    durationMs: 7,
    destination: o.destination ?? 'https://hooks.example-customer.com/webhooks/consent',
    statusCode: 200,
    responseExcerpt: o.response ?? '{"ok":true}',
    outcome: 'delivered',
    deliveryStatus: 'delivered',
    prevHash: state.headHash,
  };
  const entry = { ...body, hash: chainHash(state.headHash, body) };
  return {
    ...dispatchItem({
      ...state,
      attempts: 1,
      headHash: entry.hash,
      deliveryStatus: 'delivered',
      lastAttemptAt: entry.time,
      deliveredAt: entry.time,
      nextAttemptAt: null,
    }),
    firstAttempt: entry,
    retainUntil: 1_827_472_187,
  };
}

/** What an index that projects the view attributes holds of an item (its keys and those). */
function indexEntry(item: Record<string, unknown>, index: 'gsi1' | 'gsi2') {
  const keep = new Set<string>(['pk', 'sk', `${index}pk`, `${index}sk`, ...DISPATCH_VIEW_ATTRS]);
  return Object.fromEntries(Object.entries(item).filter(([k]) => keep.has(k)));
}

describe('packed dispatch items', () => {
  it('takes a first attempt’s item under the kilobyte and reads it back as it was', () => {
    const item = firstAttemptItem();
    const packed = packDispatch(item);
    expect(itemBytes(item)).toBeGreaterThan(1800);
    expect(itemBytes(packed)).toBeLessThan(1024);
    for (const gone of ['body', 'firstAttempt', 'type', 'prevHash', 'entryHash', 'dispatchId'])
      expect(packed).not.toHaveProperty(gone);
    expect(packed).not.toHaveProperty('nextAttemptAt');
    expect(packed[PACKED_ATTR]).toBeInstanceOf(Uint8Array);
    expect(unpackDispatch(packed)).toEqual(item);
  });

  it('stays under the kilobyte with a postback due and a long destination', () => {
    const item = firstAttemptItem({
      postback: true,
      destination: `https://consent-hooks.${'a'.repeat(40)}.example.com/api/v2/webhooks/dpdp`,
    });
    expect(itemBytes(packDispatch(item))).toBeLessThan(1024);
    expect(unpackDispatch(packDispatch(item))).toEqual(item);
  });

  it('a long response excerpt takes it over the kilobyte (two units), read back as it was', () => {
    const item = firstAttemptItem({
      response: `<html><body>request ${[1, 2, 3, 4].map((n) => sha256Hex(String(n))).join(' ')}</body></html>`,
    });
    expect(itemBytes(packDispatch(item))).toBeGreaterThan(1024);
    expect(unpackDispatch(packDispatch(item))).toEqual(item);
  });

  it('gives the listing indexes’ entries the same view as the item before packing', () => {
    const item = firstAttemptItem();
    const packed = packDispatch(item);
    for (const index of ['gsi1', 'gsi2'] as const)
      expect(toDispatch(indexEntry(packed, index))).toEqual(toDispatch(indexEntry(item, index)));
    expect(impliedFields(indexEntry(packed, 'gsi1')).entryHash).toBe(item.entryHash);
  });

  it('keeps the chain: the creation entry and the first attempt check out after a round trip', () => {
    const item = unpackDispatch(packDispatch(firstAttemptItem()));
    const a = item.firstAttempt as Record<string, unknown> & { hash: string };
    const { hash, ...body } = a;
    expect(
      checkChain(creation(item), item.entryHash, [{ label: 'ATT#001', body, hash }], item.headHash),
    ).toMatchObject({ ok: true });
  });

  it('a creation field changed by hand no longer links to the stored chain', () => {
    const packed = packDispatch(firstAttemptItem());
    const changed = unpackDispatch({ ...packed, referenceId: 'SVC-REF-AAAAAAAA' });
    expect(changed.entryHash).not.toBe(firstAttemptItem().entryHash);
    const a = changed.firstAttempt as (Record<string, unknown> & { hash: string }) | undefined;
    const entries = a ? [{ label: 'ATT#001', body: { ...a, hash: undefined }, hash: a.hash }] : [];
    expect(
      checkChain(creation(changed), changed.entryHash, entries, changed.headHash),
    ).toMatchObject({ ok: false });
  });

  it('marks a packed attribute it cannot read, without throwing', () => {
    const packed = packDispatch(firstAttemptItem());
    const damaged = unpackDispatch({ ...packed, [PACKED_ATTR]: new Uint8Array([1, 2, 3]) });
    expect(damaged.packedUnreadable).toBe(true);
    expect(damaged).not.toHaveProperty('body');
    const newer = unpackDispatch({ ...packed, [PACKED_ATTR]: new Uint8Array([9, 0]) });
    expect(newer.packedUnreadable).toBe(true);
    // 64 MiB of zeros deflates to some 64 KB: refused past 1 MiB, never inflated whole.
    const bomb = Buffer.concat([Buffer.from([1]), deflateRawSync(Buffer.alloc(64 << 20))]);
    expect(unpackDispatch({ ...packed, [PACKED_ATTR]: bomb }).packedUnreadable).toBe(true);
  });

  it('refuses what it could not read back exactly', () => {
    const item = firstAttemptItem();
    const { body: _b, ...bodiless } = item;
    expect(() => packDispatch(bodiless)).toThrow(/not a dispatch item as created/);
    expect(() => packDispatch({ ...item, entryHash: 'f'.repeat(64) })).toThrow();
    expect(() => packDispatch({ ...item, prevHash: 'a'.repeat(64) })).toThrow();
  });

  it('reads the body and first attempt from the packed attribute alone', () => {
    const packed = packDispatch(firstAttemptItem());
    const { [PACKED_ATTR]: _z, ...rest } = packed;
    // Attributes of those names beside it (set by hand) are not read as the dispatch's own.
    const bare = unpackDispatch({ ...rest, body: '{"forged":true}', firstAttempt: {} });
    expect(bare.packedUnreadable).toBe(true);
    expect(bare).not.toHaveProperty('body');
    expect(bare).not.toHaveProperty('firstAttempt');
    const beside = unpackDispatch({ ...packed, body: '{"forged":true}' });
    expect(beside.body).toBe(firstAttemptItem().body);
  });

  it('packs the redacted body in place of the sent one', () => {
    const item = firstAttemptItem();
    const packed = packDispatch(item);
    const redacted = JSON.stringify({ ...JSON.parse(String(item.body)), redacted: true });
    const z = packDispatch({ ...unpackDispatch(packed), body: redacted })[PACKED_ATTR];
    const back = unpackDispatch({ ...packed, [PACKED_ATTR]: z });
    expect(back.body).toBe(redacted);
    expect(back.firstAttempt).toEqual(item.firstAttempt);
    expect(back.bodySha256).toBe(item.bodySha256);
  });
});
