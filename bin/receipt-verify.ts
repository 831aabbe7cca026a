import fs from 'node:fs/promises';
import { verifyReceipt, type ConsentReceipt } from '../shared/receipts/receipt.js';
import { readKeySet } from '../shared/signing/key-source.js';
import { verifierArgs } from './verify-cli.js';

/**
 * Offline verification of a signed consent receipt (docs/receipts.md) with nothing but the
 * service's public keys:
 *
 *   npm run receipt:verify -- receipt.json --keys svc-keys.json
 *   npm run receipt:verify -- receipt.json --keys https://consent.example/.well-known/svc-keys.json
 *
 * Prints what the receipt says and, last, one verdict line: `OK: …` (exit 0) or `NOT OK: …`
 * (exit 1: a bad or missing signature, a changed field, an unknown key). Exit 2 when the receipt
 * or the keys cannot be read. Needs no database and no configuration; no network unless --keys
 * is a URL.
 */

const USAGE =
  'usage: npm run receipt:verify -- <receipt.json> --keys <svc-keys.json or URL> [--json]';

/** What the receipt claims, for a person to read beside the verdict (never trusted for it). */
function describe(r: Partial<ConsentReceipt>): string[] {
  const out = [
    `Consent receipt of transaction ${String(r.transactionId)} for ${String(r.referenceId)}`,
    `  controller: ${String(r.controller?.name)} <${String(r.controller?.contact?.email)}>`,
  ];
  const n = r.notice;
  out.push(
    n
      ? `  notice: ${n.noticeId} version ${n.version} (text sha256 ${n.textHash.slice(0, 16)}…), language ${String(r.language)}${r.region ? `, region ${r.region}` : ''}`
      : '  notice: none (recorded through the API)',
  );
  out.push(
    `  collected ${String(r.collectedAt)} via ${String(r.method?.via)}${r.method?.mode ? ` (${r.method.mode})` : ''}; status ${String(r.status)}; issued ${String(r.issuedAt)}`,
  );
  for (const p of Array.isArray(r.purposes) ? r.purposes : [])
    out.push(
      `  ${p.purpose}: ${p.state}${p.dataItems?.length ? ` [${p.dataItems.join(', ')}]` : ''}`,
    );
  if (Array.isArray(r.history)) out.push(`  ${r.history.length} recorded changes`);
  return out;
}

async function main(): Promise<number> {
  const args = verifierArgs(USAGE);
  if (!args) return 2;
  const { file } = args;
  let receipt: unknown;
  let keys;
  try {
    const text = await fs.readFile(file, 'utf8');
    try {
      receipt = JSON.parse(text);
    } catch {
      throw new Error(`${file} is not JSON`);
    }
    keys = await readKeySet(args.keys);
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 2;
  }
  const verdict = verifyReceipt(receipt, keys);
  if (args.json) process.stdout.write(`${JSON.stringify(verdict)}\n`);
  else {
    let lines: string[] = [];
    try {
      if (receipt !== null && typeof receipt === 'object') lines = describe(receipt);
    } catch {
      // A receipt of an unexpected shape: the verdict line below says what is wrong with it.
    }
    lines.push(
      verdict.ok
        ? `OK: the receipt's signature verifies (key ${verdict.kid})`
        : `NOT OK: ${verdict.reason}`,
    );
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return verdict.ok ? 0 : 1;
}

process.exitCode = await main();
