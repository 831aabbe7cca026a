import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Counter, Histogram, type Registry } from 'prom-client';
import { STEP_SECONDS_BUCKETS, getOrCreate } from '../metrics.js';
import { billedUnits, type TableShape } from './billing.js';
import { isCoordinationWrite } from './coordination.js';

/**
 * Counts what the process asks of DynamoDB: every request by operation, and the write
 * capacity units each write consumed, by table and operation, as DynamoDB reports them
 * (`ReturnConsumedCapacity: TOTAL` is added to every write), and the items each write request
 * writes, by table (exact: read from the request). AWS bills a transactional write two units per
 * item and kilobyte; DynamoDB Local reports a `TransactWriteItems` as two units per kilobyte of
 * its largest item per table, not the sum over its items, so on the embedded stack the units of
 * a multi-item transaction are a floor of what AWS bills (docs/benchmarks.md). And how long each
 * request took, by operation, as its caller waited for it: the SDK's retries included, failed
 * requests too (`svc_dynamodb_request_duration_seconds`). Of the items written, those that
 * coordinate copies (leases, watermarks, writers' progress: coordination.ts) are also counted
 * apart (`svc_dynamodb_coordination_items_written_total`): their pace is fixed, not per consent.
 */
const WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);

interface WriteCounters {
  units: Counter;
  items: Counter;
  coordination: Counter;
  billed: Counter;
  short: (table: string | undefined) => string;
  shapeOf: (table: string) => TableShape | undefined;
}

/** Counts one answered write request: its items, coordination items, billed and consumed units. */
function countWrite(c: WriteCounters, command: string, input: unknown, output: unknown): void {
  const operation = command.replace(/Command$/, '');
  const { short } = c;
  const left = (output as { UnprocessedItems?: Record<string, unknown[]> }).UnprocessedItems;
  const counts = itemsOf(command, input);
  for (const [table, n] of counts) {
    // Items a batch left unprocessed were not written (they are counted when retried).
    const written = n - (left?.[table]?.length ?? 0);
    if (written > 0) c.items.inc({ table: short(table), operation }, written);
  }
  const coordinating = coordinationTable(command, input, short);
  if (coordinating) c.coordination.inc({ table: coordinating });
  for (const [table, units] of billedUnits(command, input, c.shapeOf)) {
    const n = counts.get(table) ?? 0;
    const share = n > 0 ? (n - (left?.[table]?.length ?? 0)) / n : 1;
    if (units * share > 0) c.billed.inc({ table: short(table), operation }, units * share);
  }
  for (const x of consumed(output)) {
    const n = x.WriteCapacityUnits ?? x.CapacityUnits ?? 0;
    if (n > 0) c.units.inc({ table: short(x.TableName), operation }, n);
  }
}

/** The table of a single-item write of a coordination item (coordination.ts), if it is one. */
function coordinationTable(
  command: string,
  input: unknown,
  short: (table: string | undefined) => string,
): string | undefined {
  if (!SINGLE.has(command)) return undefined;
  const single = input as { TableName?: string; Item?: object; Key?: object };
  const key = (single.Item ?? single.Key) as Record<string, unknown> | undefined;
  const table = short(single.TableName);
  return key && isCoordinationWrite(table, key) ? table : undefined;
}

/** The ConsumedCapacity entries of an answer, one per table. */
function consumed(output: unknown): Consumed[] {
  const c = (output as { ConsumedCapacity?: Consumed | Consumed[] }).ConsumedCapacity;
  return Array.isArray(c) ? c : c ? [c] : [];
}

/** The writes of one item (coordination writes are all of this kind). */
const SINGLE = new Set(['PutItemCommand', 'UpdateItemCommand', 'DeleteItemCommand']);

interface Consumed {
  TableName?: string;
  CapacityUnits?: number;
  WriteCapacityUnits?: number;
}

export function instrumentDynamo(
  client: DynamoDBClient,
  registry: Registry,
  tablePrefix: string,
  /** The keys and indexes of a table, by full name (for `svc_dynamodb_billed_write_units_total`). */
  shapeOf: (table: string) => TableShape | undefined = () => undefined,
): void {
  const requests = getOrCreate(
    registry,
    'svc_dynamodb_requests_total',
    () =>
      new Counter({
        name: 'svc_dynamodb_requests_total',
        help: 'DynamoDB requests sent, by operation',
        labelNames: ['operation'],
        registers: [registry],
      }),
  );
  const units = getOrCreate(
    registry,
    'svc_dynamodb_write_units_total',
    () =>
      new Counter({
        name: 'svc_dynamodb_write_units_total',
        help: 'Write capacity units consumed (ConsumedCapacity), by table and operation',
        labelNames: ['table', 'operation'],
        registers: [registry],
      }),
  );
  const items = getOrCreate(
    registry,
    'svc_dynamodb_items_written_total',
    () =>
      new Counter({
        name: 'svc_dynamodb_items_written_total',
        help: 'Items put, updated or deleted by write requests (condition checks excluded), by table and operation',
        labelNames: ['table', 'operation'],
        registers: [registry],
      }),
  );
  const coordination = getOrCreate(
    registry,
    'svc_dynamodb_coordination_items_written_total',
    () =>
      new Counter({
        name: 'svc_dynamodb_coordination_items_written_total',
        help: "Of svc_dynamodb_items_written_total, the items that coordinate copies (leases, due-index watermarks, outbox writers' progress), written at a fixed pace whatever the load, by table",
        labelNames: ['table'],
        registers: [registry],
      }),
  );
  const billed = getOrCreate(
    registry,
    'svc_dynamodb_billed_write_units_total',
    () =>
      new Counter({
        name: 'svc_dynamodb_billed_write_units_total',
        help: 'Write units AWS DynamoDB on demand would bill for the writes sent (a model of its rules, from the requests: exact for puts, a floor for updates and deletes; shared/storage/billing.ts), by table and operation',
        labelNames: ['table', 'operation'],
        registers: [registry],
      }),
  );
  const duration = getOrCreate(
    registry,
    'svc_dynamodb_request_duration_seconds',
    () =>
      new Histogram({
        name: 'svc_dynamodb_request_duration_seconds',
        help: 'DynamoDB requests by operation: from the call to its answer (the SDK retries included, failed requests too)',
        labelNames: ['operation'],
        buckets: STEP_SECONDS_BUCKETS,
        registers: [registry],
      }),
  );
  const short = (t: string | undefined) =>
    t === undefined ? 'unknown' : t.startsWith(tablePrefix) ? t.slice(tablePrefix.length) : t;
  const counters: WriteCounters = { units, items, coordination, billed, short, shapeOf };
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const command = context.commandName ?? 'unknown';
      const operation = command.replace(/Command$/, '');
      requests.inc({ operation });
      const write = WRITES.has(command);
      if (write) {
        const input = args.input as { ReturnConsumedCapacity?: string };
        input.ReturnConsumedCapacity ??= 'TOTAL';
      }
      const started = performance.now();
      let result: Awaited<ReturnType<typeof next>>;
      try {
        result = await next(args);
      } finally {
        duration.observe({ operation }, (performance.now() - started) / 1000);
      }
      if (write) countWrite(counters, command, args.input, result.output);
      return result;
    },
    { step: 'initialize', name: 'svcInstrument', override: true },
  );
}

type WriteInput = {
  TableName?: string;
  TransactItems?: Record<string, { TableName?: string } | undefined>[];
  RequestItems?: Record<string, unknown[]>;
};

/** Items a write request writes, per table (a transaction's condition checks write nothing). */
export function itemsOf(command: string, input: unknown): Map<string, number> {
  const out = new Map<string, number>();
  const add = (t: string | undefined, n = 1) =>
    out.set(t ?? 'unknown', (out.get(t ?? 'unknown') ?? 0) + n);
  const i = input as WriteInput;
  if (command === 'TransactWriteItemsCommand') {
    for (const t of i.TransactItems ?? [])
      for (const kind of ['Put', 'Update', 'Delete'] as const) if (t[kind]) add(t[kind].TableName);
  } else if (command === 'BatchWriteItemCommand') {
    for (const [table, reqs] of Object.entries(i.RequestItems ?? {})) add(table, reqs.length);
  } else add(i.TableName);
  return out;
}
