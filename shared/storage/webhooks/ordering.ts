import {
  DeleteCommand,
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import {
  MAX_HELD,
  type PrincipalLane,
  type PrincipalLanes,
} from '../../domain/webhook-ordering.js';
import { isConditionFailure } from '../dynamo.js';

export interface LaneDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'timers'>;
}

/**
 * Principal lanes (shared/domain/webhook-ordering.ts) in the timers table, one item a principal with
 * dispatches waiting or being retried: pk `order#{appId}#{referenceId}`, sk `lane`, with
 * `head`, `held` (a list), `since` and `version`. Every write but `claim` is conditional on the version
 * read; `claim` on there being no lane.
 */
export function dynamoPrincipalLanes(db: LaneDeps): PrincipalLanes {
  const TableName = db.tables.timers;
  const Key = (appId: string, referenceId: string) => ({
    pk: `order#${appId}#${referenceId}`,
    sk: 'lane',
  });
  const conditional = async (send: () => Promise<unknown>): Promise<boolean> => {
    try {
      await send();
      return true;
    } catch (err) {
      if (isConditionFailure(err)) return false;
      throw err;
    }
  };
  return {
    async read(appId, referenceId) {
      const r = await db.dynamo.doc.send(
        new GetCommand({ TableName, Key: Key(appId, referenceId), ConsistentRead: true }),
      );
      if (!r.Item) return undefined;
      const { head, held, since, version } = r.Item as PrincipalLane;
      return { head, held: held ?? [], since, version };
    },
    claim: (appId, referenceId, dispatchId) =>
      conditional(() =>
        db.dynamo.doc.send(
          new PutCommand({
            TableName,
            Item: {
              ...Key(appId, referenceId),
              head: dispatchId,
              held: [],
              since: Date.now(),
              version: 1,
            },
            ConditionExpression: 'attribute_not_exists(pk)',
          }),
        ),
      ),
    async hold(appId, referenceId, lane, dispatchId) {
      if (lane.held.length >= MAX_HELD) return false;
      return conditional(() =>
        db.dynamo.doc.send(
          new UpdateCommand({
            TableName,
            Key: Key(appId, referenceId),
            UpdateExpression: 'SET held = list_append(held, :id), version = :next',
            ConditionExpression: 'version = :v',
            ExpressionAttributeValues: {
              ':id': [dispatchId],
              ':v': lane.version,
              ':next': lane.version + 1,
            },
          }),
        ),
      );
    },
    advance(appId, referenceId, lane) {
      const [next, ...rest] = lane.held;
      return conditional(() =>
        db.dynamo.doc.send(
          next === undefined
            ? new DeleteCommand({
                TableName,
                Key: Key(appId, referenceId),
                ConditionExpression: 'version = :v',
                ExpressionAttributeValues: { ':v': lane.version },
              })
            : new UpdateCommand({
                TableName,
                Key: Key(appId, referenceId),
                UpdateExpression: 'SET head = :head, held = :rest, since = :since, version = :next',
                ConditionExpression: 'version = :v',
                ExpressionAttributeValues: {
                  ':head': next,
                  ':rest': rest,
                  ':since': Date.now(),
                  ':v': lane.version,
                  ':next': lane.version + 1,
                },
              }),
        ),
      );
    },
  };
}
