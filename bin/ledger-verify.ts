import type { KeyObject } from 'node:crypto';
import fs from 'node:fs';
import readline from 'node:readline';
import type { DispatchView } from '../shared/ledger/evidence.js';
import { LedgerVerifier, type Finding, type VerifyReport } from '../shared/ledger/verify.js';
import { readKeySet } from '../shared/signing/key-source.js';
import { verifierArgs } from './verify-cli.js';

/**
 * Offline verification of a ledger export (GET /api/v1/ledger/export) with nothing but the
 * service's public keys (GET /.well-known/svc-keys.json):
 *
 *   npm run ledger:verify -- export.ndjson --keys svc-keys.json [--strict] [--json]
 *
 * Prints what failed and exits 1 when anything did (with --strict also when entries are not
 * sealed yet), 0 when the export verifies, 2 when it cannot be read. Needs no database, no
 * network (unless --keys is a URL) and no configuration.
 */

const USAGE =
  'usage: npm run ledger:verify -- <export.ndjson> --keys <svc-keys.json or URL> [--strict] [--json]';

async function* lines(file: string) {
  const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  let n = 0;
  for await (const line of rl) {
    n++;
    if (line.trim() !== '') yield { n, line };
  }
}

interface Summary {
  count: number;
  from: string;
  to: string;
  exportedAt?: string;
  periodMs?: number;
  lagMs?: number;
}

/** The summary line (the last line of a complete export), or why there is none. */
async function summaryOf(file: string): Promise<Summary | string> {
  let last: string | undefined;
  for await (const { line } of lines(file)) last = line;
  if (last === undefined) return 'the file is empty';
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(last) as Record<string, unknown>;
  } catch {
    return 'its last line is not JSON';
  }
  if (parsed.type === 'error')
    return `the export broke off with an error: ${String(parsed.code)} ${String(parsed.detail)}`;
  if (parsed.type !== 'summary' || typeof parsed.from !== 'string' || typeof parsed.to !== 'string')
    return 'it does not end with its summary line (cut off?)';
  return parsed as unknown as Summary;
}

async function verifyExportFile(
  file: string,
  keys: ReadonlyMap<string, KeyObject>,
): Promise<VerifyReport> {
  const summary = await summaryOf(file);
  if (typeof summary === 'string') {
    return {
      ok: false,
      appId: null,
      from: '',
      to: '',
      dispatches: 0,
      checkpoints: 0,
      sealedThrough: null,
      sealed: 0,
      failures: [{ reason: `not a complete export: ${summary}` }],
      unsealed: [],
    };
  }
  const v = new LedgerVerifier(keys, { from: summary.from, to: summary.to });
  const extra: Finding[] = [];
  let dispatches = 0;
  for await (const { n, line } of lines(file)) {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      extra.push({ at: `line ${n}`, reason: 'not JSON' });
      continue;
    }
    const { type, ...rest } = record;
    if (type === 'checkpoint') v.addCheckpoint(rest);
    else if (type === 'dispatch') {
      dispatches++;
      v.addDispatch(rest as DispatchView);
    } else if (type === 'grievance' || type === 'breach') {
      // Records for the auditor, not signed evidence: nothing to verify.
    } else if (type !== 'summary')
      extra.push({ at: `line ${n}`, reason: `unknown line type ${String(type)}` });
  }
  if (dispatches !== summary.count)
    extra.push({
      reason: `the summary counts ${summary.count} dispatches but the export holds ${dispatches}`,
    });
  const report = v.finish({
    exportedAt: summary.exportedAt ?? new Date().toISOString(),
    ...(summary.periodMs !== undefined ? { periodMs: summary.periodMs } : {}),
    ...(summary.lagMs !== undefined ? { lagMs: summary.lagMs } : {}),
  });
  const failures = [...extra, ...report.failures];
  return { ...report, ok: failures.length === 0, failures };
}

function describe(f: Finding): string {
  const where = [
    f.dispatchId ? `dispatch ${f.dispatchId}` : undefined,
    f.seq !== undefined && !f.dispatchId ? `checkpoint #${f.seq}` : undefined,
    f.at ? `[${f.at}]` : undefined,
  ]
    .filter(Boolean)
    .join(' ');
  return where ? `${where}: ${f.reason}` : f.reason;
}

function print(r: VerifyReport, strict: boolean) {
  const out: string[] = [];
  out.push(
    `Ledger export of ${r.appId ?? '(unknown app)'}: dispatches created ${r.from} … ${r.to}`,
  );
  out.push(
    `  ${r.dispatches} dispatches, ${r.checkpoints} checkpoints (sealed through ${r.sealedThrough ?? 'nothing'}), ${r.sealed} fully sealed, ${r.unsealed.length} with unsealed entries`,
  );
  if (r.failures.length > 0) {
    out.push(`FAILED: ${r.failures.length} problem${r.failures.length === 1 ? '' : 's'}`);
    for (const f of r.failures) out.push(`  ${describe(f)}`);
  }
  if (r.unsealed.length > 0) {
    out.push(`${strict ? 'UNSEALED (--strict)' : 'Not sealed yet'}: ${r.unsealed.length}`);
    for (const u of r.unsealed.slice(0, 50))
      out.push(
        `  dispatch ${u.dispatchId}: ${u.reason}${u.entries ? ` (${u.entries} entries)` : ''}`,
      );
    if (r.unsealed.length > 50) out.push(`  … and ${r.unsealed.length - 50} more`);
  }
  const passed = r.ok && !(strict && r.unsealed.length > 0);
  out.push(passed ? 'OK: the export verifies against the signed checkpoints' : 'NOT OK');
  process.stdout.write(`${out.join('\n')}\n`);
}

async function main() {
  const args = verifierArgs(USAGE, ['strict']);
  if (!args) return 2;
  let report: VerifyReport;
  try {
    report = await verifyExportFile(args.file, await readKeySet(args.keys));
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 2;
  }
  const strict = args.flags.has('strict');
  if (args.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else print(report, strict);
  return report.ok && !(strict && report.unsealed.length > 0) ? 0 : 1;
}

process.exitCode = await main();
