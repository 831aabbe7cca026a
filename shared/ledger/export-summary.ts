import type { KeyObject } from 'node:crypto';
import { signFor, verifyFor, type SigningKey } from '../signing/keys.js';
import { canonicalJson } from '../domain/ledger/hash.js';

/**
 * The signed last line of a ledger export (services/ledger/stream.ts): what the export holds
 * (range, line counts), when it was read, and the app's newest checkpoint at that moment, signed
 * with the checkpoints' Ed25519 key under a purpose of its own. Whoever hands the file on can
 * then neither drop checkpoint, dispatch or duty lines nor move `exportedAt` unnoticed.
 */

export const EXPORT_SUMMARY_PURPOSE = 'svc-ledger-export/v1';

export interface ExportSummaryBody {
  v: 1;
  appId: string;
  /** Event createdAt range of the dispatches: from inclusive, to exclusive. */
  from: string;
  to: string;
  /** Dispatch lines. */
  count: number;
  checkpoints: number;
  grievances: number;
  breaches: number;
  exportedAt: string;
  /** The last checkpoint line (the app's newest checkpoint when read), null when it had none. */
  lastCheckpoint: { seq: number; hash: string } | null;
  keyId: string;
}

export type ExportSummary = ExportSummaryBody & { type: 'summary'; signature: string };

const BODY_KEYS: (keyof ExportSummaryBody)[] = [
  'v',
  'appId',
  'from',
  'to',
  'count',
  'checkpoints',
  'grievances',
  'breaches',
  'exportedAt',
  'lastCheckpoint',
  'keyId',
];

function bodyOf(s: object): ExportSummaryBody {
  const r = s as Record<string, unknown>;
  return Object.fromEntries(
    BODY_KEYS.map((k) => [k, r[k] ?? null]),
  ) as unknown as ExportSummaryBody;
}

export function signExportSummary(
  key: SigningKey,
  body: Omit<ExportSummaryBody, 'v' | 'keyId'>,
): ExportSummary {
  const b = bodyOf({ ...body, v: 1, keyId: key.kid });
  return {
    type: 'summary',
    ...b,
    signature: signFor(key, EXPORT_SUMMARY_PURPOSE, canonicalJson(b)),
  };
}

/** Why a summary line is not one the service signed, or undefined when it is. */
export function exportSummaryProblem(
  line: object,
  keys: ReadonlyMap<string, KeyObject>,
): string | undefined {
  const s = line as Record<string, unknown>;
  if (typeof s.signature !== 'string') return 'the summary line is not signed';
  const body = bodyOf(s);
  const key = keys.get(String(body.keyId));
  if (!key)
    return `the summary is signed with key ${String(body.keyId)}, which is not among the public keys`;
  if (!verifyFor(key, EXPORT_SUMMARY_PURPOSE, canonicalJson(body), s.signature))
    return 'the summary line was altered: its signature does not verify';
  const extra = Object.keys(s).filter(
    (k) => k !== 'type' && k !== 'signature' && !(BODY_KEYS as string[]).includes(k),
  );
  if (extra.length > 0) return `the summary line holds unsigned fields: ${extra.join(', ')}`;
  return undefined;
}
