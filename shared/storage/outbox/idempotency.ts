import { randomUUID } from 'node:crypto';
import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { AppError } from '../../errors.js';
import { isConditionFailure } from '../dynamo.js';
import type { TransactItem } from './outbox.js';

const DAY_S = 86400;

/**
 * Consumer idempotency: one item per (consumer, event id). Prefer `claimItem` inside the
 * consumer's own TransactWriteItems, so "applied" and "marked processed" commit together.
 * `runOnce` serves handlers whose effect is not a single DynamoDB transaction: it claims
 * first and releases the claim if the effect fails, so a redelivery tries again.
 */
export class Processed {
  constructor(
    private readonly doc: DynamoDBDocumentClient,
    private readonly table: string,
    private readonly ttlDays = 7,
  ) {}

  private pk(consumer: string, eventId: string) {
    return `${consumer}#${eventId}`;
  }

  claimItem(consumer: string, eventId: string, nowMs = Date.now()): TransactItem {
    return {
      Put: {
        TableName: this.table,
        Item: {
          pk: this.pk(consumer, eventId),
          at: new Date(nowMs).toISOString(),
          expiresAt: Math.floor(nowMs / 1000) + this.ttlDays * DAY_S,
        },
        ConditionExpression: 'attribute_not_exists(pk)',
      },
    };
  }

  /**
   * Runs `fn` unless this consumer already processed `eventId`. Returns whether it ran.
   *
   * The claim is a lease with a token of its own, marked done once `fn` succeeded, so no
   * outcome of a fault skips the effect: a claim whose write timed out after it was applied
   * is recognised by its token on the SDK's retry; a claim whose run failed is released, and
   * if even the release fails (the store is down) its lease runs out and a redelivery takes
   * it over. A redelivery that finds a live lease of someone else's fails retriably, to be
   * tried again, instead of reporting the event processed.
   */
  async runOnce(
    consumer: string,
    eventId: string,
    fn: () => Promise<void>,
    o: { leaseMs?: number; nowMs?: number } = {},
  ): Promise<boolean> {
    const pk = this.pk(consumer, eventId);
    const now = o.nowMs ?? Date.now();
    const token = randomUUID();
    try {
      await this.doc.send(
        new PutCommand({
          TableName: this.table,
          Item: {
            pk,
            at: new Date(now).toISOString(),
            state: 'running',
            token,
            leaseUntil: now + (o.leaseMs ?? 60_000),
            expiresAt: Math.floor(now / 1000) + this.ttlDays * DAY_S,
          },
          ConditionExpression:
            'attribute_not_exists(pk) OR #t = :token OR (#s = :running AND leaseUntil < :now)',
          ExpressionAttributeNames: { '#s': 'state', '#t': 'token' },
          ExpressionAttributeValues: { ':token': token, ':running': 'running', ':now': now },
        }),
      );
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
      const held = await this.doc.send(
        new GetCommand({ TableName: this.table, Key: { pk }, ConsistentRead: true }),
      );
      const item = held.Item as { state?: string; token?: string } | undefined;
      // Claims written by `claimItem` (inside a consumer's own transaction) carry no state:
      // they are done by construction.
      if (item && item.state !== 'running') return false;
      throw new AppError('SVC_UNAVAILABLE', `event ${eventId} is being processed elsewhere`, {
        retryAfterS: 1,
      });
    }
    try {
      await fn();
    } catch (err) {
      await this.doc
        .send(
          new DeleteCommand({
            TableName: this.table,
            Key: { pk },
            ConditionExpression: '#t = :token',
            ExpressionAttributeNames: { '#t': 'token' },
            ExpressionAttributeValues: { ':token': token },
          }),
        )
        .catch(() => undefined);
      throw err;
    }
    // Marked done; if this write is lost, the lease runs out and the effect may run once more
    // (at least once), never zero times.
    await this.doc
      .send(
        new UpdateCommand({
          TableName: this.table,
          Key: { pk },
          UpdateExpression: 'SET #s = :done REMOVE leaseUntil',
          ConditionExpression: '#t = :token',
          ExpressionAttributeNames: { '#s': 'state', '#t': 'token' },
          ExpressionAttributeValues: { ':done': 'done', ':token': token },
        }),
      )
      .catch(() => undefined);
    return true;
  }
}
