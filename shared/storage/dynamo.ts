import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { DynamoDBStreamsClient } from '@aws-sdk/client-dynamodb-streams';
import {
  DeleteCommand,
  DynamoDBDocumentClient,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
  type TransactWriteCommandInput,
  type UpdateCommandInput,
} from '@aws-sdk/lib-dynamodb';
import { Agent } from 'node:http';
import type { BaseConfig } from '../config.js';

export interface Dynamo {
  client: DynamoDBClient;
  doc: DynamoDBDocumentClient;
  /** DynamoDB Streams, which the outbox relay reads (shared/storage/outbox/carrier-stream.ts). */
  streams: DynamoDBStreamsClient;
  close(): void;
}

/**
 * DynamoDB clients for either DynamoDB Local (endpoint set; dummy credentials) or AWS
 * (region set; the default credential chain).
 */
export function createDynamo(
  c: Pick<BaseConfig, 'DYNAMODB_ENDPOINT' | 'AWS_REGION'> &
    Partial<Pick<BaseConfig, 'DYNAMODB_REQUEST_TIMEOUT_MS'>>,
): Dynamo {
  const local = c.DYNAMODB_ENDPOINT !== undefined;
  // A stalled store must fail a request, not hang it: the SDK has no timeout of its own.
  // A stalled store still accepts connections (the kernel does), so the request timeout is
  // what catches a stall; connecting gets as long, so that a busy store opening many sockets
  // at once is not mistaken for a dead one.
  const requestTimeout = c.DYNAMODB_REQUEST_TIMEOUT_MS ?? 2_000;
  const timeouts = {
    connectionTimeout: requestTimeout,
    requestTimeout,
    throwOnRequestTimeout: true,
  };
  const region = c.AWS_REGION ?? 'local';
  const localEndpoint = {
    endpoint: c.DYNAMODB_ENDPOINT,
    credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
  };
  const client = new DynamoDBClient({
    region,
    ...(local
      ? {
          ...localEndpoint,
          // keep-alive pool sized for a busy ingress against a local endpoint
          requestHandler: {
            httpAgent: new Agent({ keepAlive: true, maxSockets: 64 }),
            ...timeouts,
          },
        }
      : { requestHandler: timeouts }),
    maxAttempts: 3,
  });
  const doc = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true, convertClassInstanceToMap: false },
  });
  // The same endpoint serves streams in DynamoDB Local; on AWS the region's streams endpoint.
  const streams = new DynamoDBStreamsClient({
    region,
    ...(local ? localEndpoint : {}),
    requestHandler: timeouts,
    maxAttempts: 3,
  });
  return {
    client,
    doc,
    streams,
    close: () => {
      client.destroy();
      streams.destroy();
    },
  };
}

export async function pingDynamo(d: Dynamo): Promise<void> {
  await d.client.send(new ListTablesCommand({ Limit: 1 }));
}

/**
 * Which items of a cancelled TransactWriteItems failed their condition (by operation index), and
 * whether it was contention (another transaction on the same item at the same moment), which is
 * worth retrying; undefined when the error is not a transaction cancellation.
 */
export function cancellationReasons(
  err: unknown,
): { failed: Set<number>; contention: boolean } | undefined {
  const e = err as { name?: string; CancellationReasons?: { Code?: string }[] };
  if (e?.name !== 'TransactionCanceledException') return undefined;
  const reasons = e.CancellationReasons ?? [];
  const failed = new Set<number>();
  reasons.forEach((r, i) => {
    if (r.Code === 'ConditionalCheckFailed') failed.add(i);
  });
  return { failed, contention: reasons.some((r) => r.Code === 'TransactionConflict') };
}

/** True when a write failed because its condition did not hold (including inside a transaction). */
export function isConditionFailure(err: unknown): boolean {
  if ((err as { name?: string } | undefined)?.name === 'ConditionalCheckFailedException')
    return true;
  return (cancellationReasons(err)?.failed.size ?? 0) > 0;
}

/**
 * Writes `items` as one request: a single put, update or delete as that request alone (AWS bills
 * an item in a transaction twice), anything else as one `TransactWriteItems`. A failed
 * condition throws either way (`isConditionFailure` recognises both).
 */
export async function writeItems(
  doc: DynamoDBDocumentClient,
  items: NonNullable<TransactWriteCommandInput['TransactItems']>,
): Promise<void> {
  const [only, ...more] = items;
  if (more.length === 0 && only?.Put) await doc.send(new PutCommand(only.Put));
  else if (more.length === 0 && only?.Update) await doc.send(new UpdateCommand(only.Update));
  else if (more.length === 0 && only?.Delete) await doc.send(new DeleteCommand(only.Delete));
  else await doc.send(new TransactWriteCommand({ TransactItems: items }));
}

/**
 * A conditional update whose failed condition is an answer, not an error: true when it applied,
 * false when its condition did not hold. Any other error is thrown.
 */
export async function updateIfHolds(
  doc: DynamoDBDocumentClient,
  input: UpdateCommandInput,
): Promise<boolean> {
  try {
    await doc.send(new UpdateCommand(input));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}
