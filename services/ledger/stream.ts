import { once } from 'node:events';
import type { Response } from 'express';
import { coerceError } from '../../shared/errors.js';
import { exportDispatches, type DispatchQuery } from '../../shared/ledger/export.js';
import { signExportSummary, type ExportSummaryBody } from '../../shared/ledger/export-summary.js';
import type { Logger } from '../../shared/logger.js';
import type { Runtime } from '../../shared/runtime.js';
import type { SigningKey } from '../../shared/signing/keys.js';
import { exportDuties } from './duties.js';
import { detailOf } from './view.js';

/**
 * The NDJSON export. Line format (one JSON object per line, `type` first):
 *
 *   {"type":"checkpoint", ...a signed checkpoint, "leaves":[…] for those in force in range}
 *   {"type":"dispatch", ...one dispatch as GET /dispatches/{id} returns it}
 *   {"type":"grievance", ...} / {"type":"breach", ...}    filed or recorded in range (duties.ts)
 *   {"type":"summary","v":1,"appId":…,"from":"…","to":"…","count":n,"checkpoints":m,
 *    "grievances":g,"breaches":b,"exportedAt":"…","lastCheckpoint":{"seq":…,"hash":…}|null,
 *    "keyId":…,"signature":…}                               always the last line of a full export
 *   {"type":"error","code":"SVC_…","detail":"…"}          last line when reading failed midway
 *
 * Checkpoints come first and are read first: one signed meanwhile can only seal heads newer
 * than dispatches read after it. With them the export verifies offline against the public
 * keys alone (`npm run ledger:verify`, shared/ledger/verify.ts).
 *
 * Why a summary line: the 200 status and headers leave before the data, so a failure or a
 * cut connection halfway cannot change them. An export is complete only if its last line is
 * the summary and its counts equal the lines read. The summary is signed with the checkpoints'
 * key (shared/ledger/export-summary.ts), so the file vouches for its own completeness.
 */

/** Writes a chunk, waiting for 'drain' when the socket's buffer is full (back-pressure). */
export async function writeChunk(res: Response, chunk: string, signal: AbortSignal) {
  if (res.write(chunk)) return;
  // Rejects with an AbortError when the client goes away while we wait.
  await once(res, 'drain', { signal });
}

export interface NdjsonStream {
  /** The records; pulled one at a time, only as fast as the client reads. */
  source: (signal: AbortSignal) => AsyncIterable<Record<string, unknown>>;
  /** The last line of a complete stream. */
  summary: (count: number) => Record<string, unknown>;
  log: Logger;
}

/**
 * Streams records as NDJSON with back-pressure, and stops pulling from the source once the
 * client disconnects (its iterator is returned, so a generator's `finally` runs). Errors before
 * the first byte are thrown (the caller's problem+json answer); later ones end the stream with
 * an error line.
 */
export async function writeNdjson(res: Response, s: NdjsonStream): Promise<void> {
  const gone = new AbortController();
  // 'close' after the response finished is the normal end; before, the client went away.
  const onClose = () => {
    if (!res.writableFinished) gone.abort();
  };
  res.on('close', onClose);
  let count = 0;
  try {
    for await (const record of s.source(gone.signal)) {
      await writeChunk(res, `${JSON.stringify(record)}\n`, gone.signal);
      count++;
    }
    if (!gone.signal.aborted) res.end(`${JSON.stringify(s.summary(count))}\n`);
  } catch (err) {
    if (gone.signal.aborted) return; // nobody left to tell
    if (!res.headersSent) throw err;
    const e = coerceError(err);
    s.log.error({ err, count }, 'NDJSON stream failed midway');
    res.end(`${JSON.stringify({ type: 'error', code: e.code, detail: e.message })}\n`);
  } finally {
    res.off('close', onClose);
    if (gone.signal.aborted) s.log.info({ count }, 'NDJSON stream abandoned by the client');
  }
}

export async function streamExport(
  rt: Runtime,
  key: SigningKey,
  res: Response,
  q: DispatchQuery & { from: string; to: string },
): Promise<void> {
  res.status(200);
  res.setHeader('Content-Type', 'application/x-ndjson; charset=utf-8');
  res.setHeader('Cache-Control', 'no-store');
  res.setHeader(
    'Content-Disposition',
    `attachment; filename="ledger-${q.appId}-${q.from.slice(0, 10)}-${q.to.slice(0, 10)}.ndjson"`,
  );
  const exportedAt = new Date().toISOString();
  let checkpoints = 0;
  let lastCheckpoint: ExportSummaryBody['lastCheckpoint'] = null;
  let grievances = 0;
  let breaches = 0;
  try {
    await writeNdjson(res, {
      source: async function* (signal) {
        for (const c of await rt.ledger.checkpointsFor(q.appId, q.from, q.to)) {
          checkpoints++;
          lastCheckpoint = { seq: c.seq, hash: c.hash };
          yield { type: 'checkpoint', ...c };
        }
        for await (const d of exportDispatches(rt, q, { signal }))
          yield { type: 'dispatch', ...detailOf(d) };
        for await (const line of exportDuties(rt, q, signal)) {
          if (line.type === 'grievance') grievances++;
          else breaches++;
          yield line;
        }
      },
      summary: (count) => ({
        ...signExportSummary(key, {
          appId: q.appId,
          from: q.from,
          to: q.to,
          count: count - checkpoints - grievances - breaches,
          checkpoints,
          grievances,
          breaches,
          exportedAt,
          lastCheckpoint,
        }),
      }),
      log: rt.log.child({ route: 'ledger export', appId: q.appId }),
    });
  } catch (err) {
    // Nothing was sent: the problem+json handler answers (e.g. 503) instead of an attachment.
    res.removeHeader('Content-Disposition');
    throw err;
  }
}
