import { BatchGetCommand, TransactWriteCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dispatchKey } from '../../shared/storage/ledger/dispatches.js';
import type { Runtime } from '../../shared/runtime.js';
import { DynamoLedger } from '../../shared/storage/ledger/dynamo-ledger.js';
import { dispatcherMetrics } from '../../workers/dispatcher/metrics.js';
import { FirstAttemptWriter } from '../../workers/dispatcher/writer.js';
import { testRuntime } from '../helpers/stack.js';
import { deliveredFirstAttempt } from './helpers.js';

/**
 * The first-attempt writer's safe mode against DynamoDB Local: records that may already be in
 * the ledger are group-committed as conditional transactions, and those that are become
 * duplicates without keeping the others out.
 */
let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('writer');
});
afterAll(async () => {
  await rt.close();
});

const app = { appId: 'app_writer', environment: 'sandbox' as const };

const record = () => deliveredFirstAttempt(rt, app);

describe('first-attempt writer, safe mode', () => {
  it('group-commits records, and one already recorded is a duplicate that keeps no other out', async () => {
    const writer = new FirstAttemptWriter(rt, {
      metrics: dispatcherMetrics(rt.registry),
      log: rt.log,
      maxFlushes: 1,
    });
    const recs = Array.from({ length: 30 }, record);
    // Two of them are in the ledger already (written by "another owner").
    expect(await writer.write(recs[3]!, 'safe')).toBe('recorded');
    expect(await writer.write(recs[17]!, 'safe')).toBe('recorded');

    const results = await Promise.all(recs.map((r) => writer.write(r, 'safe')));
    expect(results.filter((r) => r === 'duplicate')).toHaveLength(2);
    expect(results[3]).toBe('duplicate');
    expect(results[17]).toBe('duplicate');
    expect(results.filter((r) => r === 'recorded')).toHaveLength(28);

    const ids = recs.map((r) => r.dispatchId);
    const got = await rt.dynamo.doc.send(
      new BatchGetCommand({
        RequestItems: {
          [rt.tables.ledger]: { Keys: ids.map(dispatchKey), ConsistentRead: true },
        },
      }),
    );
    expect(got.Responses?.[rt.tables.ledger]).toHaveLength(30);
  });

  /**
   * Fault injection in front of the real DynamoDB Local: transactions that time out before they
   * reach the store, and one whose answer is lost after it applied.
   */
  function faultyStore(plan: ('never-sent' | 'lose-answer')[]) {
    const sent: (string | undefined)[] = [];
    const timeout = () =>
      Object.assign(new Error('request timed out (injected)'), { name: 'TimeoutError' });
    const doc = {
      send: async (command: unknown) => {
        if (!(command instanceof TransactWriteCommand)) return rt.dynamo.doc.send(command as never);
        sent.push(command.input.ClientRequestToken);
        const fault = plan.shift();
        if (fault === 'never-sent') throw timeout();
        const out = await rt.dynamo.doc.send(command as never);
        if (fault === 'lose-answer') throw timeout();
        return out;
      },
    } as unknown as typeof rt.dynamo.doc;
    const dynamo = { ...rt.dynamo, doc };
    // The ledger the writer writes through, on the faulty client.
    return { rt: { ...rt, dynamo, ledger: new DynamoLedger({ ...rt, dynamo }) } as Runtime, sent };
  }

  it('a transaction that keeps timing out is tried until it lands, its lost answer with the same token: recorded once', async () => {
    // Six timeouts (as many as the writer used to try before giving up), then an answer lost
    // after the transaction applied, then the store answers.
    const faulty = faultyStore([...Array<'never-sent'>(6).fill('never-sent'), 'lose-answer']);
    const writer = new FirstAttemptWriter(faulty.rt, {
      metrics: dispatcherMetrics(rt.registry),
      log: rt.log,
      maxFlushes: 1,
    });
    const recs = Array.from({ length: 3 }, record);
    const results = await Promise.all(recs.map((r) => writer.write(r, 'safe')));
    // The retry after the lost answer succeeded as the same request: recorded, not duplicate.
    expect(results).toEqual(['recorded', 'recorded', 'recorded']);
    // The first record went alone (the other two queued behind it and went together next):
    // its transaction was sent 8 times, all with one token; the next one once.
    expect(faulty.sent).toHaveLength(9);
    expect(new Set(faulty.sent.slice(0, 8)).size).toBe(1);
    expect(faulty.sent[8]).not.toBe(faulty.sent[0]);
    const got = await rt.dynamo.doc.send(
      new BatchGetCommand({
        RequestItems: {
          [rt.tables.ledger]: {
            Keys: recs.map((r) => dispatchKey(r.dispatchId)),
            ConsistentRead: true,
          },
        },
      }),
    );
    expect(got.Responses?.[rt.tables.ledger]).toHaveLength(3);
  }, 60_000);

  it('never puts one dispatch twice in a transaction', async () => {
    const writer = new FirstAttemptWriter(rt, {
      metrics: dispatcherMetrics(rt.registry),
      log: rt.log,
      maxFlushes: 1,
    });
    const rec = record();
    const [a, b] = await Promise.all([writer.write(rec, 'safe'), writer.write(rec, 'safe')]);
    expect([a, b].sort()).toEqual(['duplicate', 'recorded']);
  });
});
