import { DeleteCommand, PutCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { isConditionFailure } from '../storage/dynamo.js';
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

  /** Runs `fn` unless this consumer already processed `eventId`. Returns whether it ran. */
  async runOnce(consumer: string, eventId: string, fn: () => Promise<void>): Promise<boolean> {
    const claim = this.claimItem(consumer, eventId).Put!;
    try {
      await this.doc.send(new PutCommand(claim));
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
    try {
      await fn();
      return true;
    } catch (err) {
      await this.doc
        .send(new DeleteCommand({ TableName: this.table, Key: { pk: this.pk(consumer, eventId) } }))
        .catch(() => undefined);
      throw err;
    }
  }
}
