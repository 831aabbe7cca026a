import { describe, expect, it } from 'vitest';
import { itemsOf } from './instrument.js';

describe('itemsOf', () => {
  it('counts the items a transaction writes per table, not its condition checks', () => {
    const m = itemsOf('TransactWriteItemsCommand', {
      TransactItems: [
        { Put: { TableName: 'a' } },
        { Update: { TableName: 'a' } },
        { Delete: { TableName: 'b' } },
        { ConditionCheck: { TableName: 'a' } },
      ],
    });
    expect([...m]).toEqual([
      ['a', 2],
      ['b', 1],
    ]);
  });

  it('counts a batch by table and a single write as one item', () => {
    expect([
      ...itemsOf('BatchWriteItemCommand', { RequestItems: { a: [{}, {}, {}], b: [{}] } }),
    ]).toEqual([
      ['a', 3],
      ['b', 1],
    ]);
    expect([...itemsOf('PutItemCommand', { TableName: 'a' })]).toEqual([['a', 1]]);
    expect([...itemsOf('DeleteItemCommand', { TableName: 'b' })]).toEqual([['b', 1]]);
  });
});
