import type { KeyObject } from 'node:crypto';
import fs from 'node:fs';
import readline from 'node:readline';
import type { DispatchView } from '../shared/ledger/evidence.js';
import { exportSummaryProblem, type ExportSummary } from '../shared/ledger/export-summary.js';
import { LedgerVerifier, type Finding, type VerifyReport } from '../shared/ledger/verify.js';
import { readKeySet } from '../shared/signing/key-source.js';
import { verifierArgs } from './verify-cli.js';

/**
 * Offline verification of a ledger export (GET /api/v1/ledger/export) with nothing but the
 * service's public keys (GET /.well-known/svc-keys.json):
 *
 *   npm run ledger:verify -- export.ndjson --keys svc-keys.json [--json]
 *
 * The export's signed summary line vouches for its range, its line counts, when it was read
 * and its newest checkpoint; the checkpoints vouch for the dispatches (shared/ledger/verify.ts).
 * Prints what failed and exits 1 when anything did, 0 when the export verifies (entries written
 * within the sealing lag are listed as not sealed yet), 2 when it cannot be read. Needs no
 * database, no network (unless --keys is a URL) and no configuration.
 */

const USAGE =
  'usage: npm run ledger:verify -- <export.ndjson> --keys <svc-keys.json or URL> [--json]';

async function* lines(file: string) {
  const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  let n = 0;
  for await (const line of rl) {
    n++;
    if (line.trim() !== '') yield { n, line };
  }
}

/** The signed summary line (the last line of a complete export), or why there is none. */
async function summaryOf(
  file: string,
  keys: ReadonlyMap<string, KeyObject>,
): Promise<ExportSummary | string> {
  const incomplete = (why: string) => `not a complete export: ${why}`;
  let last: string | undefined;
  for await (const { line } of lines(file)) last = line;
  if (last === undefined) return incomplete('the file is empty');
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(last) as Record<string, unknown>;
  } catch {
    return incomplete('its last line is not JSON');
  }
  if (parsed.type === 'error')
    return incomplete(
      `the export broke off with an error: ${String(parsed.code)} ${String(parsed.detail)}`,
    );
  if (parsed.type !== 'summary')
    return incomplete('it does not end with its summary line (cut off?)');
  return exportSummaryProblem(parsed, keys) ?? (parsed as unknown as ExportSummary);
}

const refused = (reason: string): VerifyReport => ({
  ok: false,
  appId: null,
  from: '',
  to: '',
  dispatches: 0,
  checkpoints: 0,
  sealedThrough: null,
  sealed: 0,
  failures: [{ reason }],
  unsealed: [],
});

type Held = Record<'dispatch' | 'checkpoint' | 'grievance' | 'breach' | 'summary', number>;

/** What the lines read disagree with in the signed summary. */
function againstSummary(
  s: ExportSummary,
  held: Held & { newest: { seq: number; hash: string } | null; appId: string | null },
): Finding[] {
  const out: Finding[] = [];
  if (held.summary !== 1) out.push({ reason: `${held.summary} summary lines, not one` });
  const counted = [
    ['dispatch', s.count, held.dispatch],
    ['checkpoint', s.checkpoints, held.checkpoint],
    ['grievance', s.grievances, held.grievance],
    ['breach', s.breaches, held.breach],
  ] as const;
  for (const [what, signed, got] of counted)
    if (signed !== got)
      out.push({
        reason: `the signed summary counts ${signed} ${what} lines but the export holds ${got}`,
      });
  const [named, newest] = [s.lastCheckpoint, held.newest];
  if (named && (newest?.seq !== named.seq || newest.hash !== named.hash))
    out.push({
      reason: `the signed summary names checkpoint #${named.seq} as the newest, but the export's newest is ${newest ? `#${newest.seq}` : 'none'}`,
    });
  if (!named && newest)
    out.push({
      reason: 'the signed summary says the app had no checkpoint, but the export holds some',
    });
  if (held.appId !== null && held.appId !== s.appId)
    out.push({ reason: `the checkpoints are ${held.appId}'s, the summary ${s.appId}'s` });
  return out;
}

async function verifyExportFile(
  file: string,
  keys: ReadonlyMap<string, KeyObject>,
): Promise<VerifyReport> {
  const summary = await summaryOf(file, keys);
  if (typeof summary === 'string') return refused(summary);
  const v = new LedgerVerifier(keys, { from: summary.from, to: summary.to });
  const extra: Finding[] = [];
  const held: Held = { dispatch: 0, checkpoint: 0, grievance: 0, breach: 0, summary: 0 };
  let newest: { seq: number; hash: string } | null = null;
  for await (const { n, line } of lines(file)) {
    let record: Record<string, unknown>;
    try {
      record = JSON.parse(line) as Record<string, unknown>;
    } catch {
      extra.push({ at: `line ${n}`, reason: 'not JSON' });
      continue;
    }
    const { type, ...rest } = record;
    if (typeof type === 'string' && Object.hasOwn(held, type)) held[type as keyof typeof held]++;
    if (type === 'checkpoint') {
      v.addCheckpoint(rest);
      if (newest === null || Number(rest.seq) > newest.seq)
        newest = { seq: Number(rest.seq), hash: String(rest.hash) };
    } else if (type === 'dispatch') v.addDispatch(rest as DispatchView);
    else if (type !== 'grievance' && type !== 'breach' && type !== 'summary')
      // Grievances and breaches are records for the auditor, counted by the summary.
      extra.push({ at: `line ${n}`, reason: `unknown line type ${String(type)}` });
  }
  const report = v.finish({ exportedAt: summary.exportedAt });
  extra.push(...againstSummary(summary, { ...held, newest, appId: report.appId }));
  const failures = [...extra, ...report.failures];
  return { ...report, appId: summary.appId, ok: failures.length === 0, failures };
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

function print(r: VerifyReport) {
  const out: string[] = [];
  out.push(
    `Ledger export of ${r.appId ?? '(unknown app)'}: dispatches created ${r.from} … ${r.to}`,
  );
  out.push(
    `  ${r.dispatches} dispatches, ${r.checkpoints} checkpoints (sealed through ${r.sealedThrough ?? 'nothing'}), ${r.sealed} fully sealed, ${r.unsealed.length} with entries not sealed yet`,
  );
  if (r.failures.length > 0) {
    out.push(`FAILED: ${r.failures.length} problem${r.failures.length === 1 ? '' : 's'}`);
    for (const f of r.failures) out.push(`  ${describe(f)}`);
  }
  if (r.unsealed.length > 0) {
    out.push(`Not sealed yet (written within the sealing lag): ${r.unsealed.length}`);
    for (const u of r.unsealed.slice(0, 50))
      out.push(
        `  dispatch ${u.dispatchId}: ${u.reason}${u.entries ? ` (${u.entries} entries)` : ''}`,
      );
    if (r.unsealed.length > 50) out.push(`  … and ${r.unsealed.length - 50} more`);
  }
  if (!r.ok) out.push('NOT OK');
  else if (r.checkpoints > 0) out.push('OK: the export verifies against the signed checkpoints');
  else out.push('OK: the summary is signed; the export holds no dispatch and no checkpoint');
  process.stdout.write(`${out.join('\n')}\n`);
}

async function main() {
  const args = verifierArgs(USAGE);
  if (!args) return 2;
  let report: VerifyReport;
  try {
    report = await verifyExportFile(args.file, await readKeySet(args.keys));
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
    return 2;
  }
  if (args.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else print(report);
  return report.ok ? 0 : 1;
}

process.exitCode = await main();
