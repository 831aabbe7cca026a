import { DynamoDBClient, CreateTableCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient, BatchWriteCommand } from '@aws-sdk/lib-dynamodb';
import { randomUUID } from 'node:crypto';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import http from 'node:http';
import { createTableInput, tableDefs } from './infra/definitions/tables.js';
const port = process.argv[2];
const raw = new DynamoDBClient({ endpoint: `http://127.0.0.1:${port}`, region: 'local', credentials: { accessKeyId: 'x', secretAccessKey: 'x' }, requestHandler: new NodeHttpHandler({ httpAgent: new http.Agent({ keepAlive: true, maxSockets: 64 }) }) });
const doc = DynamoDBDocumentClient.from(raw);
const P = 'p' + Date.now() + '_'; const T = P + 'ledger';
await raw.send(new CreateTableCommand(createTableInput(P, tableDefs.ledger)));
const body = 'x'.repeat(400);
const pair = () => { const id = randomUUID(); const s = new Date().toISOString() + '#' + id; return [
  { pk: 'DSP#' + id, sk: 'DSP', body, dispatchId: id, eventId: 'evt_x', event: 'consent.granted', appId: 'app_x', environment: 'sandbox', referenceId: 'ref', createdAt: s, dispatchedAt: s, postbackRequired: false, postbackDueAt: null, bodySha256: 'a'.repeat(64), deliveryStatus: 'delivered', attempts: 1, lastAttemptAt: s, nextAttemptAt: null, deliveredAt: s, complianceFlag: null, entryHash: 'b'.repeat(64), headHash: 'c'.repeat(64), gsi1pk: 'APP#app_x', gsi1sk: s, gsi2pk: 'APP#app_x#REF#' + id, gsi2sk: s },
  { pk: 'DSP#' + id, sk: 'ATT#001', type: 'attempt', dispatchId: id, attempt: 1, trigger: 'first', time: s, durationMs: 3, destination: 'http://127.0.0.1:1234/ep1', statusCode: 200, responseExcerpt: '{"ok":true}', outcome: 'delivered', prevHash: 'c'.repeat(64), hash: 'd'.repeat(64) }]; };
async function loop(name: string, conc: number, secs: number, perOp: number, op: () => Promise<unknown>) {
  let n = 0; const end = Date.now() + secs * 1000;
  await Promise.all(Array.from({ length: conc }, async () => { while (Date.now() < end) { await op(); n++; } }));
  console.log(`${name.padEnd(20)} c=${conc} ${(n * perOp / secs).toFixed(0)} dispatches/s`);
}
const bw = () => doc.send(new BatchWriteCommand({ RequestItems: { [T]: [...Array.from({ length: 12 }, pair).flat(), pair()[0]!].map((Item) => ({ PutRequest: { Item } })) } }));
const dspOnly = () => doc.send(new BatchWriteCommand({ RequestItems: { [T]: Array.from({ length: 25 }, () => pair()[0]!).map((Item) => ({ PutRequest: { Item } })) } }));
await loop('warm', 4, 8, 12.5, bw);
await loop('batch pair', 4, 5, 12.5, bw);
await loop('batch dsp only', 4, 5, 25, dspOnly);
