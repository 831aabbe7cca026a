import {
  QueryCommand,
  type DynamoDBDocumentClient,
  type QueryCommandInput,
  type QueryCommandOutput,
} from '@aws-sdk/lib-dynamodb';

/** A query's input; the paginators supply `ExclusiveStartKey` themselves. */
export type QueryInput = Omit<QueryCommandInput, 'ExclusiveStartKey'>;

/** One item as the document client returns it. */
export type QueryItem = NonNullable<QueryCommandOutput['Items']>[number];

/**
 * The pages of a query, in order, one request per page. A page is read only when the one before
 * it has been consumed, so a caller that stops (break, return, throw) sends no further request.
 */
export async function* queryPages(
  doc: DynamoDBDocumentClient,
  input: QueryInput,
): AsyncGenerator<QueryItem[], void, undefined> {
  let start: Record<string, unknown> | undefined;
  do {
    const r = await doc.send(
      new QueryCommand({ ...input, ...(start ? { ExclusiveStartKey: start } : {}) }),
    );
    yield r.Items ?? [];
    start = r.LastEvaluatedKey;
  } while (start);
}

/** Every item of a query, following LastEvaluatedKey to the end. */
export async function queryAll(
  doc: DynamoDBDocumentClient,
  input: QueryInput,
): Promise<QueryItem[]> {
  const out: QueryItem[] = [];
  for await (const items of queryPages(doc, input)) out.push(...items);
  return out;
}
