import { GetCommand, PutCommand } from '@aws-sdk/lib-dynamodb';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ulid } from 'ulid';
import { AppError } from '../../shared/errors.js';
import type { Runtime } from '../../shared/runtime.js';
import { testRuntime } from '../helpers/stack.js';

let rt: Runtime;
beforeAll(async () => {
  rt = await testRuntime('idem');
});
afterAll(async () => {
  await rt.close();
});

describe('Processed.runOnce against DynamoDB Local', () => {
  it('runs an effect once; a redelivery after success is skipped', async () => {
    const id = `evt_${ulid()}`;
    let runs = 0;
    expect(await rt.processed.runOnce('c', id, async () => void runs++)).toBe(true);
    expect(await rt.processed.runOnce('c', id, async () => void runs++)).toBe(false);
    expect(runs).toBe(1);
  });

  it('releases the claim of a failed effect, so the redelivery runs it', async () => {
    const id = `evt_${ulid()}`;
    await expect(
      rt.processed.runOnce('c', id, () => Promise.reject(new Error('smtp down'))),
    ).rejects.toThrow('smtp down');
    let ran = false;
    expect(await rt.processed.runOnce('c', id, async () => void (ran = true))).toBe(true);
    expect(ran).toBe(true);
  });

  it('takes over a claim left running when its holder died (lease over), never skipping the effect', async () => {
    const id = `evt_${ulid()}`;
    // What a process killed inside the effect (or unable to release its claim) leaves behind.
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.processed,
        Item: { pk: `c#${id}`, state: 'running', token: 'dead', leaseUntil: Date.now() - 1 },
      }),
    );
    let ran = false;
    expect(await rt.processed.runOnce('c', id, async () => void (ran = true))).toBe(true);
    expect(ran).toBe(true);
    const item = await rt.dynamo.doc.send(
      new GetCommand({ TableName: rt.tables.processed, Key: { pk: `c#${id}` } }),
    );
    expect(item.Item?.state).toBe('done');
  });

  it('fails retriably, not as "processed", while another holder’s lease is live', async () => {
    const id = `evt_${ulid()}`;
    await rt.dynamo.doc.send(
      new PutCommand({
        TableName: rt.tables.processed,
        Item: { pk: `c#${id}`, state: 'running', token: 'other', leaseUntil: Date.now() + 60_000 },
      }),
    );
    let ran = false;
    const err = await rt.processed
      .runOnce('c', id, async () => void (ran = true))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).retriable).toBe(true);
    expect(ran).toBe(false);
  });
});
