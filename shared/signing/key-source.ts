import type { KeyObject } from 'node:crypto';
import fs from 'node:fs/promises';
import { keysFromJwks } from './keys.js';

/**
 * The service's public keys for an offline verifier (bin/ledger-verify.ts, bin/receipt-verify.ts):
 * from a saved copy of `/.well-known/svc-keys.json` (a file path) or fetched from its URL.
 */
export async function readKeySet(source: string): Promise<Map<string, KeyObject>> {
  let text: string;
  if (/^https?:\/\//i.test(source)) {
    const r = await fetch(source, { headers: { accept: 'application/json' } });
    if (!r.ok) throw new Error(`could not fetch the key set from ${source}: HTTP ${r.status}`);
    text = await r.text();
  } else {
    text = await fs.readFile(source, 'utf8');
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error(`the key set at ${source} is not JSON`);
  }
  return keysFromJwks(doc);
}
