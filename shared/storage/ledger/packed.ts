import { deflateRawSync, inflateRawSync } from 'node:zlib';
import { CREATION_FIELDS } from './creation.js';
import { GENESIS, chainHash } from '../../domain/ledger/hash.js';

/**
 * How a dispatch item is stored. AWS bills a write a unit per started KB; a first attempt's
 * dispatch item with its body and attempt as plain attributes is about 1.9 KB (two units),
 * packed about 0.94 KB (one).
 *
 * - What only the dispatch's own readers need, the signed webhook body and the first attempt's
 *   entry when the item was created with it, is kept in one binary attribute, `dz`: their JSON
 *   deflated against a dictionary of a fixed template and the dispatch's creation fields, which
 *   never change and which the body and the entry repeat (event id, app id, referenceId, times,
 *   the creation hash the entry chains to).
 * - What follows from the rest is left out (`impliedFields` puts it back): the constants every
 *   dispatch item holds (`type`, `prevHash`), its id (its key holds it), the creation hash
 *   (`entryHash`, the hash of the creation fields) and the view attributes that are null
 *   (`NULLABLE`).
 *
 * Every reader of a dispatch item or of an index entry of one puts them back first
 * (`unpackDispatch`, `impliedFields`), so the chain's entries and the API's fields are exact.
 * A creation field changed by hand changes the creation hash the reader computes and the
 * dictionary the first attempt is read back with, so the chain no longer checks out at its
 * first attempt (or, with no attempt yet, at the stored `headHash`). Updates touch only plain
 * attributes; the erasure's redaction rewrites `dz` (redact.ts). `dz` is the only place a
 * dispatch's body and first attempt are read from.
 */

/** The attribute holding the packed body and first attempt. */
export const PACKED_ATTR = 'dz';

/**
 * The most a packed attribute may unpack to. A body and an attempt entry are a few KB (the
 * response excerpt is cut at 4 KiB, the error message at 500 B); anything that inflates past
 * this was written by hand, and is read as unreadable rather than filling the memory.
 */
const MAX_UNPACKED = 1 << 20;

/** The format's first byte. A new template is a new version; a stored version never changes. */
const VERSION = 1;

/**
 * The creation fields the dictionary repeats (never updated after the dispatch is created). Part
 * of the format, so spelled out here rather than taken from `CREATION_FIELDS`: a field added
 * there must not change the dictionary of items already stored.
 */
const FIXED = [
  'dispatchId',
  'eventId',
  'event',
  'appId',
  'environment',
  'referenceId',
  'createdAt',
  'dispatchedAt',
  'entryHash',
] as const;

/** View attributes left out of a packed item while null, and put back as null on reading. */
export const NULLABLE = ['postbackDueAt', 'nextAttemptAt', 'complianceFlag'] as const;

// What bodies and first attempts spell the same way (webhook payloads, attempt entries, in the
// order they are written). Fixed for VERSION 1: one byte changed would make every item stored
// with it unreadable.
const TEMPLATE_V1 =
  'consent.withdrawnconsent.updated"errorClass":"timeout","errorMessage":"' +
  '{"b":"{\\"id\\":\\"evt_\\",\\"type\\":\\"consent.granted\\",\\"apiVersion\\":\\"v1\\",' +
  '\\"createdAt\\":\\"2026-\\",\\"appId\\":\\"app_\\",\\"environment\\":\\"sandbox\\",' +
  '\\"data\\":{\\"referenceId\\":\\"SVC-REF-\\",\\"userId\\":null,\\"consentId\\":\\"\\",' +
  '\\"sequence\\":2,\\"recordIds\\":[\\"\\",\\"\\"],' +
  '\\"purposes\\":{\\"analytics\\":true,\\"marketing\\":false},' +
  '\\"state\\":{\\"analytics\\":\\"granted\\",\\"marketing\\":\\"withdrawn\\"},' +
  '\\"noticeId\\":null,\\"noticeVersion\\":null,\\"expiresAt\\":\\"2027-\\",\\"postback\\":' +
  '{\\"required\\":true,\\"dueAt\\":\\"2026-\\"}}}","a":{"type":"attempt","dispatchId":"dsp_",' +
  '"attempt":1,"trigger":"first","time":"2026-","durationMs":1,"destination":"https://",' +
  '"statusCode":200,"responseExcerpt":"{\\"ok\\":true}","outcome":"delivered",' +
  '"deliveryStatus":"delivered","prevHash":"","hash":"';

/** Every creation field is a string (a boolean or null elsewhere is none of these). */
const text = (v: unknown) => (typeof v === 'string' ? v : '');

const dictionary = (item: Record<string, unknown>) =>
  Buffer.from(TEMPLATE_V1 + FIXED.map((k) => text(item[k])).join('"'));

/** The key prefix of a dispatch item (dispatches.ts, `dispatchPk`). */
const PK_PREFIX = 'DSP#';

/** A dispatch item's id: its own attribute, or its key's (a packed item leaves the attribute out). */
export function dispatchIdOf(item: Record<string, unknown>): string | undefined {
  if (typeof item.dispatchId === 'string') return item.dispatchId;
  return typeof item.pk === 'string' && item.pk.startsWith(PK_PREFIX)
    ? item.pk.slice(PK_PREFIX.length)
    : undefined;
}

/**
 * An item of a dispatch (from the table, or an entry of one of the ledger's indexes) with what
 * a packed item leaves implied put back: `type`, `prevHash`, `dispatchId` (from `pk`), the null
 * view attributes, and `entryHash`, computed when every creation field is there to compute it
 * from (an index entry that projects fewer keeps it absent). An item holding them all is
 * returned as it is.
 */
export function impliedFields<T extends Record<string, unknown>>(item: T): T {
  if (item.sk !== undefined && item.sk !== 'DSP') return item; // an entry, not a dispatch item
  const missing =
    item.type === undefined ||
    item.prevHash === undefined ||
    item.dispatchId === undefined ||
    item.entryHash === undefined ||
    NULLABLE.some((k) => item[k] === undefined);
  if (!missing) return item;
  const out: Record<string, unknown> = { ...item };
  out.type ??= 'dispatch';
  out.prevHash ??= GENESIS;
  out.dispatchId ??= dispatchIdOf(out);
  for (const k of NULLABLE) out[k] ??= null;
  if (out.entryHash === undefined && CREATION_FIELDS.every((k) => out[k] !== undefined))
    out.entryHash = chainHash(GENESIS, Object.fromEntries(CREATION_FIELDS.map((k) => [k, out[k]])));
  return out as T;
}

/**
 * A dispatch item as stored. Only a dispatch item as created is stored (a body, the implied
 * creation entry): anything else would lose what the reader recomputes, and is refused.
 */
export function packDispatch(item: Record<string, unknown>): Record<string, unknown> {
  const derived = impliedFields({ ...item, entryHash: undefined }).entryHash;
  if (
    typeof item.body !== 'string' ||
    item.type !== 'dispatch' ||
    item.prevHash !== GENESIS ||
    derived !== item.entryHash
  )
    throw new Error(`dispatch ${String(item.dispatchId)}: not a dispatch item as created`);
  const json = JSON.stringify(
    item.firstAttempt === undefined ? { b: item.body } : { b: item.body, a: item.firstAttempt },
  );
  const packed = deflateRawSync(Buffer.from(json), { dictionary: dictionary(item), level: 9 });
  const out: Record<string, unknown> = {
    ...item,
    [PACKED_ATTR]: Buffer.concat([Buffer.from([VERSION]), packed]),
  };
  for (const k of ['body', 'firstAttempt', 'type', 'prevHash', 'entryHash']) delete out[k];
  if (String(item.pk) === PK_PREFIX + String(item.dispatchId)) delete out.dispatchId;
  for (const k of NULLABLE) if (out[k] === null) delete out[k];
  return out;
}

/**
 * A stored dispatch item as the ledger's readers know it: everything `packDispatch` left out
 * back in place. A packed attribute that is missing or cannot be read back (a newer format, or
 * the item changed by hand) leaves the item without its body and first attempt, marked
 * `packedUnreadable`: verification then finds the chain broken instead of failing to run, and
 * nothing is sent from it.
 */
export function unpackDispatch<T extends Record<string, unknown>>(item: T): T {
  const raw = item[PACKED_ATTR];
  const { [PACKED_ATTR]: _z, body: _b, firstAttempt: _a, ...rest } = impliedFields(item);
  const full: Record<string, unknown> = rest;
  try {
    const bytes = raw instanceof Uint8Array ? Buffer.from(raw) : undefined;
    if (!bytes || bytes[0] !== VERSION) throw new Error('unknown format');
    const json = inflateRawSync(bytes.subarray(1), {
      dictionary: dictionary(full),
      maxOutputLength: MAX_UNPACKED,
    }).toString();
    const inner = JSON.parse(json) as { b?: unknown; a?: unknown };
    if (typeof inner.b !== 'string') throw new Error('no body');
    full.body = inner.b;
    if (inner.a !== undefined) full.firstAttempt = inner.a;
  } catch {
    full.packedUnreadable = true;
  }
  return full as T;
}
