import { marshall } from '@aws-sdk/util-dynamodb';
import { describe, expect, it } from 'vitest';
import { billedUnits, itemBytes, putUnits, type TableShape } from './billing.js';

const shape: TableShape = {
  keys: ['pk', 'sk'],
  indexes: [
    { partitionKey: 'gsi1pk', sortKey: 'gsi1sk' },
    { partitionKey: 'obxw', sortKey: 'obxt', keysOnly: true },
  ],
};

describe('AWS write unit model', () => {
  it('sizes an item by names and values, the same in the document and the low-level form', () => {
    const item = { pk: 'ab', n: 12345, b: true, list: ['x', 'yz'], m: { k: 'v' } };
    // pk 2 + 2; n 1 + (5 digits: 3 + 1); b 1 + 1; list 4 + 3 + (1 + 1) + (1 + 2);
    // m 1 + 3 + (k 1 + 1 + v 1)
    expect(itemBytes(item)).toBe(4 + 5 + 2 + 12 + 7);
    expect(itemBytes(marshall(item) as Record<string, unknown>)).toBe(itemBytes(item));
  });

  it('bills a put per started kilobyte, twice in a transaction, plus each index it lands in', () => {
    const small = { pk: 'a', sk: 'b', v: 'x'.repeat(100) };
    expect(putUnits(small, shape, false)).toBe(1);
    expect(putUnits(small, shape, true)).toBe(2);
    const big = { ...small, v: 'x'.repeat(1500) };
    expect(putUnits(big, shape, true)).toBe(4);
    // An ALL index copies the whole item; a keys-only one only the keys.
    expect(putUnits({ ...big, gsi1pk: 'p', gsi1sk: 's' }, shape, false)).toBe(2 + 2);
    expect(putUnits({ ...big, obxw: 'w#1', obxt: '1#e' }, shape, false)).toBe(2 + 1);
    // An index whose sort key is missing is not written.
    expect(putUnits({ ...big, gsi1pk: 'p' }, shape, false)).toBe(2);
  });

  it('totals a request per table: transactional puts, updates and checks at two units', () => {
    const m = billedUnits(
      'TransactWriteItemsCommand',
      {
        TransactItems: [
          { Put: { TableName: 'a', Item: { pk: 'a', sk: 'b' } } },
          { Update: { TableName: 'a' } },
          { ConditionCheck: { TableName: 'b' } },
        ],
      },
      () => shape,
    );
    expect([...m]).toEqual([
      ['a', 4],
      ['b', 2],
    ]);
    const batch = billedUnits(
      'BatchWriteItemCommand',
      { RequestItems: { a: [{ PutRequest: { Item: { pk: 'a' } } }, { DeleteRequest: {} }] } },
      () => shape,
    );
    expect([...batch]).toEqual([['a', 2]]);
  });
});
