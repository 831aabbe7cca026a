import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { Counter, type Registry } from 'prom-client';
import { getOrCreate } from '../metrics.js';

/**
 * Counts what the process asks of DynamoDB: every request by operation, and the write
 * capacity units each write consumed, by table and operation, as DynamoDB reports them
 * (`ReturnConsumedCapacity: TOTAL` is added to every write). A transactional write consumes
 * two units per item (1 KB), as AWS bills it; DynamoDB Local reports the same units.
 */
const WRITES = new Set([
  'PutItemCommand',
  'UpdateItemCommand',
  'DeleteItemCommand',
  'BatchWriteItemCommand',
  'TransactWriteItemsCommand',
]);

interface Consumed {
  TableName?: string;
  CapacityUnits?: number;
  WriteCapacityUnits?: number;
}

export function instrumentDynamo(
  client: DynamoDBClient,
  registry: Registry,
  tablePrefix: string,
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
  const short = (t: string | undefined) =>
    t === undefined ? 'unknown' : t.startsWith(tablePrefix) ? t.slice(tablePrefix.length) : t;
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
      const result = await next(args);
      if (write) {
        const out = result.output as { ConsumedCapacity?: Consumed | Consumed[] };
        const list = Array.isArray(out.ConsumedCapacity)
          ? out.ConsumedCapacity
          : out.ConsumedCapacity
            ? [out.ConsumedCapacity]
            : [];
        for (const c of list) {
          const n = c.WriteCapacityUnits ?? c.CapacityUnits ?? 0;
          if (n > 0) units.inc({ table: short(c.TableName), operation }, n);
        }
      }
      return result;
    },
    { step: 'initialize', name: 'svcInstrument', override: true },
  );
}
