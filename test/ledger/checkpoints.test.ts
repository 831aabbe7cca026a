import { DeleteCommand, QueryCommand } from '@aws-sdk/lib-dynamodb';
import { execFile } from 'node:child_process';
import { verify as edVerify, createPublicKey } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { keysService } from '../../services/keys/index.js';
import { postbackService } from '../../services/postback/index.js';
import { chainHead } from '../../shared/storage/ledger/checkpoint-store.js';
import { canonicalJson } from '../../shared/domain/ledger/hash.js';
import { checkpointWorker } from '../../workers/checkpoints/index.js';
import { complianceWorker } from '../../workers/compliance/index.js';
import {
  deleteNewestEntries,
  dropCheckpointLines,
  dropDispatch,
  dropSummary,
  editSummary,
  exportLines,
  rewriteExportedEntry,
  rewriteLastFlag,
  setHeadField,
} from '../helpers/tamper.js';
import { startLedgerProcess, type LedgerApp, type LedgerFixture } from './fixture.js';

/**
 * Signed ledger checkpoints end to end (docs/security.md, Ledger checkpoints): real consents
 * delivered by the dispatcher, a real postback flagged by the compliance worker, periods of one
 * second sealed by the checkpoint worker. Each app is then tampered with the way a deliberate
 * tamperer with write access to the ledger table would (chains kept consistent): the ledger API and
 * the offline verifier (`npm run ledger:verify`, run as its own process) must both catch it.
 */

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const SEED = '5e'.repeat(32);

let f: LedgerFixture;
let dir: string;
const LABELS = ['honest', 'deleted', 'flipped', 'dropped', 'truncated'] as const;
const apps: Record<(typeof LABELS)[number], LedgerApp> = {} as never;
/** Per app: the dispatch ids by event type. */
const ids: Record<string, Record<string, string>> = {};

const range = () => {
  const from = new Date(Date.now() - 3_600_000).toISOString();
  const to = new Date(Date.now() + 3_600_000).toISOString();
  return `from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}`;
};
const verifyRange = (a: LedgerApp) =>
  f.call('GET', `/api/v1/ledger/verify?${range()}`, { key: a.auditor });
const verifyOne = (a: LedgerApp, id: string) =>
  f.call('GET', `/api/v1/ledger/dispatches/${id}/verify`, { key: a.auditor });

/** Runs the offline verifier (bin/ledger-verify.ts) as its own process. */
async function cli(file: string) {
  const args = ['--import', 'tsx', path.join(ROOT, 'bin/ledger-verify.ts'), file];
  try {
    const r = await run(process.execPath, [...args, '--keys', path.join(dir, 'svc-keys.json')], {
      cwd: ROOT,
    });
    return { code: 0, out: r.stdout };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

/** Exports the app's ledger to a file. */
async function exportTo(a: LedgerApp, label: string) {
  const exp = await f.call('GET', `/api/v1/ledger/export?${range()}`, { key: a.auditor });
  expect(exp.status).toBe(200);
  const file = path.join(dir, `${label}.ndjson`);
  fs.writeFileSync(file, exp.text);
  return { file, lines: exp.text };
}

/** Exports the app's ledger and runs the offline verifier on it. */
async function offline(a: LedgerApp, label: string) {
  const { file, lines } = await exportTo(a, label);
  return { ...(await cli(file)), lines };
}

async function postback(a: LedgerApp, dispatchId: string, referenceId: string) {
  const r = await fetch(`${f.p.url}/api/v1/server/consent/action`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-secret-key': a.secretKey },
    body: JSON.stringify({
      dispatchId,
      referenceId,
      status: 'processed',
      completedAt: new Date().toISOString(),
      risk: 'high',
    }),
  });
  expect(r.status, await r.text()).toBe(202);
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-checkpoints-'));
  f = await startLedgerProcess('ledger-checkpoints', {
    services: [postbackService, keysService],
    workers: [complianceWorker, checkpointWorker],
    env: {
      SVC_SIGNING_KEY: SEED,
      LEDGER_CHECKPOINT_PERIOD_MS: '1000',
      LEDGER_CHECKPOINT_LAG_MS: '300',
      LEDGER_CHECKPOINT_INTERVAL_MS: '100',
    },
  });
  for (const label of LABELS) {
    const a = (apps[label] = await f.createApp(label));
    const ref = await f.consent(a, 'user-1', { marketing: true });
    const put = await f.call('PUT', '/api/v1/consents/user-1', {
      key: a.writer,
      body: { consents: { marketing: false } },
    });
    expect(put.status, put.text).toBe(200);
    await f.settle(a, 3);
    const list = await f.call('GET', '/api/v1/ledger/dispatches?limit=200', { key: a.auditor });
    ids[label] = Object.fromEntries(
      list.body.items.map((d: { event: string; dispatchId: string }) => [d.event, d.dispatchId]),
    );
    await postback(a, ids[label]['consent.withdrawn']!, ref);
  }
  const keys = await fetch(`${f.p.url}/.well-known/svc-keys.json`);
  fs.writeFileSync(path.join(dir, 'svc-keys.json'), await keys.text());
  // Everything flagged, and every entry of every dispatch sealed.
  for (const a of Object.values(apps))
    await vi.waitFor(
      async () => {
        const r = await verifyRange(a);
        expect(r.body).toMatchObject({ ok: true, dispatches: 3, sealed: 3, unsealedCount: 0 });
      },
      { timeout: 30_000, interval: 200 },
    );
}, 120_000);

afterAll(async () => {
  await f?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('ledger checkpoints', { timeout: 90_000 }, () => {
  it('publishes the signing key, and an untampered ledger verifies by the API and offline', async () => {
    const a = apps.honest;
    const keys = await fetch(`${f.p.url}/.well-known/svc-keys.json`);
    expect(keys.headers.get('access-control-allow-origin')).toBe('*');
    const jwks = (await keys.json()) as { keys: { kid: string; x: string; status: string }[] };
    expect(jwks.keys).toEqual([
      expect.objectContaining({ kty: 'OKP', crv: 'Ed25519', status: 'active' }),
    ]);

    const withdrawn = ids.honest!['consent.withdrawn']!;
    const one = await verifyOne(a, withdrawn);
    expect(one.body).toMatchObject({
      ok: true,
      failures: [],
      seal: { entriesAfter: 0, sealedHead: one.body.headHash },
    });
    const detail = await f.call('GET', `/api/v1/ledger/dispatches/${withdrawn}`, {
      key: a.auditor,
    });
    expect(detail.body.complianceFlag).toBe('breach');
    expect(detail.body.flagHistory).toEqual([
      { flag: 'breach', at: expect.any(String), cause: 'postback' },
    ]);
    expect(detail.body.flagEntries).toEqual([
      expect.objectContaining({ flag: 'breach', seq: 1, previous: null, hash: one.body.headHash }),
    ]);

    const res = await offline(a, 'honest');
    expect(res.out).toMatch(/OK: the export verifies/);
    expect(res.code).toBe(0);
    // A checkpoint line verifies with node:crypto alone, from the published JWK.
    const cp = res.lines
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((l) => l.type === 'checkpoint' && l.leafCount > 0);
    const { type: _t, hash: _h, signature, leaves: _l, ...body } = cp;
    const jwk = jwks.keys.find((k) => k.kid === body.keyId)!;
    const pub = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    const msg = Buffer.from(`svc-ledger-checkpoint/v1\n${canonicalJson(body)}`);
    expect(edVerify(null, msg, pub, Buffer.from(signature, 'base64url'))).toBe(true);
    expect(edVerify(null, Buffer.from(`${msg}x`), pub, Buffer.from(signature, 'base64url'))).toBe(
      false,
    );
  });

  it('detects the newest entries deleted, and the sealer will not sign the shortened chain', async () => {
    const a = apps.deleted;
    const withdrawn = ids.deleted!['consent.withdrawn']!;
    // The postback and its flag go; the head moves back to the attempt; the change index is
    // stamped as if the dispatch had just changed, inviting the sealer to seal it again.
    await deleteNewestEntries(f.p.rt, withdrawn, 2, { touch: true });
    const refusals = async () =>
      (await f.p.rt.registry.getSingleMetric('svc_ledger_checkpoint_refusals_total')!.get())
        .values[0]!.value;
    await vi.waitFor(async () => expect(await refusals()).toBeGreaterThan(0), {
      timeout: 10_000,
      interval: 200,
    });

    const one = await verifyOne(a, withdrawn);
    expect(one.body.ok).toBe(false);
    expect(one.body.reason).toMatch(/entries sealed in checkpoint #\d+ are missing or altered/);
    const all = await verifyRange(a);
    expect(all.body.ok).toBe(false);
    expect(all.body.failures).toEqual([
      expect.objectContaining({
        dispatchId: withdrawn,
        reason: expect.stringMatching(/missing or altered/),
      }),
    ]);
    const res = await offline(a, 'deleted');
    expect(res.code).toBe(1);
    expect(res.out).toContain(`dispatch ${withdrawn}`);
    expect(res.out).toMatch(/missing or altered/);
  });

  it('detects a flipped flag: in the head alone, and rewritten in its entry with the chain redone', async () => {
    const a = apps.flipped;
    const granted = ids.flipped!['consent.granted']!;
    const withdrawn = ids.flipped!['consent.withdrawn']!;
    await setHeadField(f.p.rt, granted, 'complianceFlag', 'ok');
    await rewriteLastFlag(f.p.rt, withdrawn, 'ok');
    const detail = await f.call('GET', `/api/v1/ledger/dispatches/${withdrawn}`, {
      key: a.auditor,
    });
    expect(detail.body.complianceFlag).toBe('ok');

    const head = await verifyOne(a, granted);
    expect(head.body).toMatchObject({
      ok: false,
      brokenAt: 'complianceFlag',
      reason: 'complianceFlag is "ok" but its entries say null',
    });
    const entry = await verifyOne(a, withdrawn);
    expect(entry.body.ok).toBe(false);
    expect(entry.body.reason).toMatch(/missing or altered/);
    const all = await verifyRange(a);
    const failed = all.body.failures.map((x: { dispatchId: string }) => x.dispatchId);
    expect([...new Set(failed)].sort()).toEqual([granted, withdrawn].sort());
    const res = await offline(a, 'flipped');
    expect(res.code).toBe(1);
    expect(res.out).toContain('complianceFlag is "ok" but its entries say null');
    expect(res.out).toContain(`dispatch ${withdrawn}: entries sealed in checkpoint`);
  });

  it('detects a whole dispatch dropped', async () => {
    const a = apps.dropped;
    const created = ids.dropped!['consent.created']!;
    await dropDispatch(f.p.rt, created);
    expect((await verifyOne(a, created)).status).toBe(404);
    const all = await verifyRange(a);
    expect(all.body).toMatchObject({ ok: false, dispatches: 2 });
    expect(all.body.failures).toEqual([
      expect.objectContaining({
        dispatchId: created,
        reason: expect.stringMatching(/sealed in checkpoint #\d+ but missing from the ledger/),
      }),
    ]);
    const res = await offline(a, 'dropped');
    expect(res.code).toBe(1);
    expect(res.out).toMatch(
      new RegExp(`dispatch ${created}: sealed in checkpoint #\\d+ but missing`),
    );
  });

  it('will not build on a chain that lost its newest checkpoints', async () => {
    const rt = f.p.rt;
    const a = apps.truncated;
    const head = await vi.waitFor(
      async () => {
        const h = (await chainHead(rt, a.appId))!;
        expect(h.seq).toBeGreaterThanOrEqual(4);
        return h;
      },
      { timeout: 15_000, interval: 200 },
    );
    // The two newest checkpoints go, and the period records pointing at them, so nothing in
    // the store remembers them: only a sealer that saw them can tell.
    const T = rt.tables.checkpoints;
    for (const seq of [head.seq, head.seq - 1])
      await rt.dynamo.doc.send(
        new DeleteCommand({
          TableName: T,
          Key: { pk: `CHAIN#${a.appId}`, sk: `SEQ#${String(seq).padStart(12, '0')}` },
        }),
      );
    const periods = await rt.dynamo.doc.send(
      new QueryCommand({
        TableName: T,
        KeyConditionExpression: 'pk = :pk',
        ExpressionAttributeValues: { ':pk': `PERIODS#${a.appId}` },
      }),
    );
    for (const p of periods.Items ?? [])
      if (Number(p.seq) > head.seq - 2)
        await rt.dynamo.doc.send(new DeleteCommand({ TableName: T, Key: { pk: p.pk, sk: p.sk } }));
    const honest = (await chainHead(rt, apps.honest.appId))!.seq;
    // Periods go on being sealed for the other apps, never again on top of #seq-2 for this one.
    await vi.waitFor(
      async () => expect((await chainHead(rt, apps.honest.appId))!.seq).toBeGreaterThan(honest + 3),
      { timeout: 15_000, interval: 200 },
    );
    expect((await chainHead(rt, a.appId))!.seq).toBe(head.seq - 2);
  });

  it('tells an incomplete export from a verified one', async () => {
    const { file, lines } = await exportTo(apps.honest, 'cut');
    // Cut off before the summary line.
    fs.writeFileSync(file, `${lines.trim().split('\n').slice(0, -1).join('\n')}\n`);
    const r = await cli(file);
    expect(r.code).toBe(1);
    expect(r.out).toMatch(/not a complete export/);
  });
});

/**
 * A hostile exporter: the honest app's export edited as a file before it reaches the auditor
 * (test/helpers/tamper.ts), each chain kept consistent on its own. The signed summary and the
 * checkpoints must give every edit away.
 */
describe('a tampered export file', { timeout: 90_000 }, () => {
  let honest: string;
  const withdrawn = () => ids.honest!['consent.withdrawn']!;

  async function tampered(label: string, text: string) {
    const file = path.join(dir, `${label}.ndjson`);
    fs.writeFileSync(file, text);
    const r = await cli(file);
    expect(r.out).not.toMatch(/verifies against the signed checkpoints/);
    expect(r.out).toMatch(/NOT OK/);
    expect(r.code).toBe(1);
    return r.out;
  }

  beforeAll(async () => {
    honest = (await exportTo(apps.honest, 'honest-file')).lines;
  });

  it('passes untampered, with a signed summary naming the newest checkpoint', async () => {
    const lines = exportLines(honest);
    const summary = lines.at(-1)!;
    const cps = lines.filter((l) => l.type === 'checkpoint');
    expect(summary).toMatchObject({
      type: 'summary',
      appId: apps.honest.appId,
      count: 3,
      checkpoints: cps.length,
      lastCheckpoint: { seq: cps.at(-1)!.seq, hash: cps.at(-1)!.hash },
      signature: expect.any(String),
    });
    expect(summary).not.toHaveProperty('periodMs');
    const r = await cli(path.join(dir, 'honest-file.ndjson'));
    expect(r.out).toMatch(/3 fully sealed/);
    expect(r.out).toMatch(/OK: the export verifies against the signed checkpoints/);
    expect(r.code).toBe(0);
  });

  it('fails with the checkpoint lines deleted', async () => {
    const out = await tampered('no-checkpoints', dropCheckpointLines(honest));
    expect(out).toMatch(/the signed summary counts \d+ checkpoint lines but the export holds 0/);
    expect(out).toMatch(/names checkpoint #\d+ as the newest, but the export's newest is none/);
    expect(out).toMatch(/no authentic checkpoint: nothing vouches for the 3 dispatches/);
  });

  it("fails with a dispatch's postback rewritten and its chain recomputed", async () => {
    const text = rewriteExportedEntry(honest, withdrawn(), 'postbacks', { risk: 'low' });
    expect(text).not.toBe(honest);
    const out = await tampered('postback', text);
    expect(out).not.toMatch(/chain broken/);
    expect(out).toMatch(
      new RegExp(
        `dispatch ${withdrawn()}: entries sealed in checkpoint #\\d+ are missing or altered`,
      ),
    );
  });

  it("fails with a dispatch's flag rewritten and its chain recomputed, checkpoints gone too", async () => {
    const text = rewriteExportedEntry(honest, withdrawn(), 'flagEntries', { flag: 'ok' });
    const alone = await tampered('flag', text);
    expect(alone).not.toMatch(/chain broken|but its entries say/);
    expect(alone).toMatch(new RegExp(`dispatch ${withdrawn()}: entries sealed in checkpoint`));
    // The whole attack: no checkpoint left to contradict the new chain, the summary adjusted.
    const both = await tampered(
      'flag-no-checkpoints',
      editSummary(dropCheckpointLines(text), { checkpoints: 0, lastCheckpoint: null }),
    );
    expect(both).toMatch(/the summary line was altered: its signature does not verify/);
  });

  it('fails with exportedAt moved before the oldest entry', async () => {
    const oldest = exportLines(honest)
      .filter((l) => l.type === 'dispatch')
      .map((l) => String(l.createdAt))
      .sort()[0]!;
    const before = new Date(Date.parse(oldest) - 60_000).toISOString();
    const out = await tampered('exported-at', editSummary(honest, { exportedAt: before }));
    expect(out).toMatch(/the summary line was altered: its signature does not verify/);
  });

  it('fails with the summary edited or its signature removed', async () => {
    const count = await tampered('count', editSummary(honest, { count: 2 }));
    expect(count).toMatch(/the summary line was altered: its signature does not verify/);
    const unsigned = await tampered('unsigned', editSummary(honest, { signature: undefined }));
    expect(unsigned).toMatch(/the summary line is not signed/);
    const extra = await tampered('period', editSummary(honest, { periodMs: 1 }));
    expect(extra).toMatch(/the summary line holds unsigned fields: periodMs/);
  });

  it('fails with the summary removed', async () => {
    const out = await tampered('no-summary', dropSummary(honest));
    expect(out).toMatch(/not a complete export: it does not end with its summary line/);
  });
});
