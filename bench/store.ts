import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { CreateTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb';
import {
  BatchWriteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from '@aws-sdk/lib-dynamodb';
import { createTableInput, tableDefs, type TableDef } from '../infra/definitions/tables.js';
import { itemBytes } from '../shared/storage/billing.js';
import { ChaosStack } from '../test/chaos/harness.js';
import { onTmpfs } from './lib.js';
import type { BenchOutcome } from './record.js';

/**
 * `npm run bench -- store`: what each kind of request the service sends costs DynamoDB Local in
 * CPU, on its own stack with nothing else running. A breakdown of `npm run bench -- e2e`'s
 * "CPU ms/consent, DynamoDB Local" (not a headline: no service, no Kafka): its requests per
 * consent times these costs. Items have the sizes of a consent of the record API and of its
 * dispatch items (about 340 B, 1,650 B and 2,020 B). Every case runs twice and only the second
 * pass is printed: DynamoDB Local's JIT keeps getting faster over the first few thousand
 * requests, so whichever case ran first paid for it (a single pass once showed a request token
 * costing a transaction 2.5 ms; warm, it costs nothing measurable). In each pass a case is a
 * warm-up of WARM requests, then COUNT requests, 4 in flight (a quarter of each for 12-consent
 * transactions, a tenth for 25-item batches). BENCH_STORE_COUNT, BENCH_STORE_WARM. Then what
 * syncs to disk add to each kind of write, on disk against tmpfs (`syncCost`).
 */
const COUNT = Number(process.env.BENCH_STORE_COUNT ?? 2_000);
const WARM = Number(process.env.BENCH_STORE_WARM ?? 300);

function cpuMs(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10; // clock ticks (100/s) → ms
}

/** A string attribute that brings `item` to about `bytes` bytes. */
function sized(item: Record<string, unknown>, bytes: number): Record<string, unknown> {
  const base = itemBytes({ ...item, data: '' });
  return {
    ...item,
    data: randomBytes(bytes)
      .toString('base64')
      .slice(0, Math.max(0, bytes - base)),
  };
}

export async function run(): Promise<BenchOutcome> {
  const cases: StoreCase[] = [];
  const stack = await ChaosStack.create((m) => console.error(`[stack] ${m}`));
  const client = new DynamoDBClient({
    endpoint: stack.dynamoEndpoint,
    region: 'local',
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  });
  const doc = DynamoDBDocumentClient.from(client);
  const pid = stack.pid('dynamodb');
  const ledgerAs = (indexes: TableDef['indexes']): TableDef => ({ ...tableDefs.ledger, indexes });
  const ledgers = {
    'as declared (gsi1, gsi2 the listing attributes; gsi3 keys only)': ledgerAs(
      tableDefs.ledger.indexes,
    ),
    // What a ledger table created before the listing projection has (docs/operations.md).
    'gsi1, gsi2 ALL (tables created before)': ledgerAs(
      tableDefs.ledger.indexes.map((ix) =>
        ix.name === 'gsi1' || ix.name === 'gsi2' ? { ...ix, include: undefined } : ix,
      ),
    ),
    'gsi1, gsi2, gsi3 keys only': ledgerAs(
      tableDefs.ledger.indexes.map((ix) => ({ ...ix, keysOnly: true })),
    ),
    'no indexes': ledgerAs([]),
  };
  try {
    const prefix = `store${Date.now().toString(36)}_`;
    const tables = [
      tableDefs.entities,
      tableDefs.timers,
      ...Object.values(ledgers).map((d, i) => ({ ...d, name: `ledger${i}` })),
    ];
    for (const d of tables) await client.send(new CreateTableCommand(createTableInput(prefix, d)));
    const entities = `${prefix}${tableDefs.entities.name}`;
    const timers = `${prefix}${tableDefs.timers.name}`;

    const measurers = [measurer(pid), measurer(pid, cases)];
    console.log(
      `DynamoDB Local, every case run once unmeasured (its JIT compiles over the first thousands of requests, so a case measured early would pay for it), then ${COUNT} requests per case after ${WARM} not counted (fewer for the large ones), 4 in flight:`,
    );
    for (const measure of measurers) {
      await measure('Query, an empty due-index bucket (what the sweeps send)', 1, (i) =>
        doc.send(
          new QueryCommand({
            TableName: timers,
            KeyConditionExpression: 'pk = :p AND sk <= :s',
            ExpressionAttributeValues: { ':p': `retry#${i % 8}`, ':s': '2027' },
          }),
        ),
      );
      await measure('GetItem, consistent (a cache refresh, a lookup)', 1, (i) =>
        doc.send(
          new GetCommand({
            TableName: entities,
            Key: { pk: `APP#app_bench#REF#${i}`, sk: 'PRINCIPAL' },
            ConsistentRead: true,
          }),
        ),
      );
      for (const [label, token] of [
        ['TransactWriteItems, one consent, with a request token (as sent)', true],
        ['TransactWriteItems, one consent, without a request token', false],
      ] as const)
        await measure(label, 1, (i) =>
          doc.send(
            new TransactWriteCommand({
              TransactItems: consent(entities, `c${i}`),
              ...(token ? { ClientRequestToken: randomUUID() } : {}),
            }),
          ),
        );
      await measure(
        'PutItem × 2, one consent (principal, then transaction), conditional',
        1,
        async (i) => {
          for (const w of consent(entities, `p${i}`)) await doc.send(new PutCommand(w.Put));
        },
      );
      await measure(
        'TransactWriteItems, 12 consents (group commit under load)',
        12,
        (i) =>
          doc.send(
            new TransactWriteCommand({
              TransactItems: Array.from({ length: 12 }, (_, k) =>
                consent(entities, `g${i}-${k}`),
              ).flat(),
              ClientRequestToken: randomUUID(),
            }),
          ),
        0.25,
      );
      for (const [li, label] of Object.keys(ledgers).entries()) {
        const table = `${prefix}ledger${li}`;
        await measure(
          `BatchWriteItem, 25 dispatch items, ledger indexes ${label}`,
          25,
          (i) =>
            writeAll(
              doc,
              table,
              Array.from({ length: 25 }, (_, k) => dispatch(`${table}-${i}-${k}`)),
            ),
          0.1,
        );
      }
    }
  } finally {
    client.destroy();
    await stack.stop();
  }
  const sync = process.env.BENCH_STORE_SYNC !== '0' ? await syncCost() : [];
  return {
    figures: { cases, sync },
    settings: { count: COUNT, warm: WARM, inFlight: 4 },
  };
}

/** DynamoDB Local's CPU for one kind of request, from the second (warm) pass. */
interface StoreCase {
  label: string;
  cpuMsPerRequest: number;
  /** Items or consents in one request (1, 12 or 25). */
  per: number;
  requestsPerS: number;
}

/** One kind of write one at a time: p50 as the client waited, on disk and on tmpfs. */
interface SyncCase {
  label: string;
  items: number;
  diskP50Ms: number;
  tmpfsP50Ms: number;
}

/**
 * What DynamoDB Local's syncs to disk cost a write, beside its CPU: the same writes one at a time
 * (nothing else in flight, so each one's time is its own), timed by the client, on a DynamoDB
 * Local keeping its files on disk as the embedded stack does and on one keeping them on tmpfs
 * (/dev/shm), where a sync costs nothing. Each first takes SYNC_WARM writes of every kind
 * unmeasured (its JIT). BENCH_STORE_SYNC=0 skips it.
 */
async function syncCost(): Promise<SyncCase[]> {
  const SYNC_COUNT = Number(process.env.BENCH_STORE_SYNC_COUNT ?? 200);
  const SYNC_WARM = Number(process.env.BENCH_STORE_SYNC_WARM ?? 1_500);
  const entities = (prefix: string) => `${prefix}${tableDefs.entities.name}`;
  const ledger = (prefix: string) => `${prefix}${tableDefs.ledger.name}`;
  const cases: {
    label: string;
    items: number;
    op: (doc: DynamoDBDocumentClient, prefix: string, tag: string) => Promise<unknown>;
  }[] = [
    {
      label: 'TransactWriteItems, one consent (2 puts)',
      items: 1,
      op: (doc, prefix, tag) =>
        doc.send(
          new TransactWriteCommand({
            TransactItems: consent(entities(prefix), tag),
            ClientRequestToken: randomUUID(),
          }),
        ),
    },
    {
      label: 'BatchWriteItem, 1 dispatch item',
      items: 1,
      op: (doc, prefix, tag) => writeAll(doc, ledger(prefix), [dispatch(tag)]),
    },
    {
      label: 'BatchWriteItem, 25 dispatch items',
      items: 25,
      op: (doc, prefix, tag) =>
        writeAll(
          doc,
          ledger(prefix),
          Array.from({ length: 25 }, (_, k) => dispatch(`${tag}-${k}`)),
        ),
    },
  ];
  /** The p50 (ms) of each case, in `cases`' order, on one DynamoDB Local. */
  const measure = async (where: string): Promise<number[]> => {
    const stack = await ChaosStack.create((m) => console.error(`[stack ${where}] ${m}`));
    const client = new DynamoDBClient({
      endpoint: stack.dynamoEndpoint,
      region: 'local',
      credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
    });
    const doc = DynamoDBDocumentClient.from(client);
    try {
      const prefix = `sync${Date.now().toString(36)}_`;
      for (const d of [tableDefs.entities, tableDefs.ledger])
        await client.send(new CreateTableCommand(createTableInput(prefix, d)));
      for (let i = 0; i < SYNC_WARM; i++)
        await cases[i % cases.length]!.op(doc, prefix, `s${where}${n++}`);
      const p50s: number[] = [];
      for (const c of cases) {
        const times: number[] = [];
        for (let i = 0; i < SYNC_COUNT; i++) {
          const t0 = performance.now();
          await c.op(doc, prefix, `s${where}${n++}`);
          times.push(performance.now() - t0);
        }
        times.sort((a, b) => a - b);
        p50s.push(times[Math.floor(times.length / 2)]!);
      }
      return p50s;
    } finally {
      client.destroy();
      await stack.stop();
    }
  };
  const disk = await measure('disk');
  const tmpfs = await onTmpfs(() => measure('tmpfs'));
  console.log(
    `\nDisk syncs: the same writes one at a time (${SYNC_COUNT} each, after ${SYNC_WARM} unmeasured), p50 as the client waited, DynamoDB Local's files on disk (as the embedded stack keeps them) and on tmpfs:`,
  );
  for (const [k, { label, items }] of cases.entries()) {
    const syncs = disk[k]! - tmpfs[k]!;
    console.log(
      `  ${label.padEnd(52)} disk ${disk[k]!.toFixed(2).padStart(6)} ms, tmpfs ${tmpfs[k]!.toFixed(2).padStart(6)} ms: syncs ${syncs.toFixed(2)} ms a request${items > 1 ? ` (${(syncs / items).toFixed(2)} an item)` : ''}`,
    );
  }
  return cases.map(({ label, items }, k) => ({
    label,
    items,
    diskP50Ms: disk[k]!,
    tmpfsP50Ms: tmpfs[k]!,
  }));
}

/**
 * The writes of one consent of the record API, as an app created since the claim layout makes
 * them: principal and transaction (in no `txn` index: its id carries its referenceId), and no
 * check of a pointer item.
 */
function consent(entities: string, tag: string) {
  const pk = `APP#app_bench#REF#${tag}`;
  return [
    {
      Put: {
        TableName: entities,
        Item: sized({ pk, sk: 'PRINCIPAL', kind: 'principal' }, 340),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
    {
      Put: {
        TableName: entities,
        Item: sized(
          {
            pk,
            sk: `TXN#${tag}`,
            kind: 'transaction',
            duepk: `expiry#20271126#${tag.length % 8}`,
            duesk: `2027-11-26T00:00:00.000Z#expiry:${tag}`,
            obxw: 'w_bench',
            obxt: `${Date.now()}#${tag}`,
          },
          784,
        ),
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    },
  ];
}

/** A dispatch item holding its first attempt, about 2 KB, with its three index keys. */
const dispatch = (tag: string) =>
  sized(
    {
      pk: `DSP#${tag}`,
      sk: 'DSP',
      gsi1pk: 'APP#app_bench',
      gsi1sk: `${new Date().toISOString()}#${tag}`,
      gsi2pk: `APP#app_bench#REF#${tag}`,
      gsi2sk: `${new Date().toISOString()}#${tag}`,
      gsi3pk: `CHG#${tag.length % 16}`,
      gsi3sk: `${Date.now()}#${tag}`,
    },
    2_020,
  );

/** Request numbers, never reused: every key written is new, in both passes. */
let n = 0;

/**
 * Runs one case and, when it has `into`, prints DynamoDB Local's CPU per request (and per item
 * or consent) and keeps it there.
 */
function measurer(pid: number, into?: StoreCase[]) {
  return async (label: string, per: number, op: (i: number) => Promise<unknown>, share = 1) => {
    const count = Math.max(1, Math.round(COUNT * share));
    const warm = Math.max(1, Math.round(WARM * share));
    let next = 0;
    const loop = async (count: number) =>
      Promise.all(
        Array.from({ length: 4 }, async () => {
          while (next < count) await op(n + next++);
        }),
      );
    await loop(warm);
    n += next;
    next = 0;
    const c0 = cpuMs(pid);
    const t0 = Date.now();
    await loop(count);
    n += next;
    const cpu = (cpuMs(pid) - c0) / count;
    const rate = count / ((Date.now() - t0) / 1000);
    into?.push({ label, cpuMsPerRequest: cpu, per, requestsPerS: rate });
    if (into)
      console.log(
        `  ${label.padEnd(72)} ${cpu.toFixed(2).padStart(6)} ms CPU a request${per > 1 ? ` (${(cpu / per).toFixed(2)} per ${per === 25 ? 'item' : 'consent'})` : ''}, ${rate.toFixed(0)} requests/s`,
      );
  };
}

async function writeAll(
  doc: DynamoDBDocumentClient,
  table: string,
  items: Record<string, unknown>[],
) {
  let request: Record<string, { PutRequest: { Item: Record<string, unknown> } }[]> = {
    [table]: items.map((Item) => ({ PutRequest: { Item } })),
  };
  while (Object.keys(request).length > 0) {
    const r = await doc.send(new BatchWriteCommand({ RequestItems: request }));
    request = (r.UnprocessedItems ?? {}) as typeof request;
  }
}
