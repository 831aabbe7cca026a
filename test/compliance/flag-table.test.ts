import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPipeline, type Pipeline, type PipelineApp } from './fixture.js';

/**
 * The content-flag table of docs/api.md (Compliance flags), row by row, end to end: consent
 * withdrawn over the record API → signed webhook → postback over the postback API → flag read back
 * through the auditors' ledger API. Scale 60 gives a 60 s window, so every postback is in time and
 * the content of the postback alone decides the flag.
 */
let f: Pipeline;
let app: PipelineApp;

beforeAll(async () => {
  f = await startPipeline('compliance-flag-table');
  app = await f.createApp(60);
});
afterAll(async () => {
  await f?.close();
});

describe('each row of the postback flag table, end to end', () => {
  // docs/api.md, Compliance flags: the content of an in-time postback decides the flag.
  it.each([
    ['processed', 'low', undefined, 'ok'],
    ['deleted', 'none', undefined, 'ok'],
    ['failed', 'none', 'CRM was down', 'at_risk'],
    ['partial', 'low', undefined, 'at_risk'],
    ['processed', 'medium', undefined, 'at_risk'],
    ['processed', 'high', undefined, 'breach'],
    ['partial', 'critical', undefined, 'critical'],
  ] as const)('status %s, risk %s, remark %s → %s', async (status, risk, remark, flag) => {
    const w = await f.withdrawnUser(app, `row-${status}-${risk}`);
    const r = await f.postback(app, {
      dispatchId: w.dispatchId,
      referenceId: w.referenceId,
      status,
      risk,
      ...(remark ? { remark } : {}),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const d = await f.waitForFlags(w.dispatchId, [flag]);
    expect(d).toMatchObject({
      complianceFlag: flag,
      postbacks: [expect.objectContaining({ status, risk })],
    });
  });
});
