import {
  GetCommand,
  PutCommand,
  UpdateCommand,
  type DynamoDBDocumentClient,
} from '@aws-sdk/lib-dynamodb';
import { ulid } from 'ulid';
import type { TableNames } from '../../../infra/definitions/tables.js';
import type { App } from '../../domain/types.js';
import { isConditionFailure } from '../dynamo.js';
import type { Outbox } from '../outbox/outbox.js';

/** What endpoint health uses: the store, and the outbox for the disable notice. */
export interface EndpointDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities'>;
  outbox: Pick<Outbox, 'commit'>;
  topics: { notifications: string };
}

/**
 * Webhook endpoint health in the entities table (pk `APP#{appId}`, sk `ENDPOINT`). The state
 * belongs to one URL: when the app's webhookUrl changes, the old state (including a disable)
 * no longer applies and the next outcome starts a fresh one.
 */
export interface EndpointState {
  appId: string;
  url: string;
  lastSuccessAt?: string;
  failingSince?: string;
  disabledAt?: string;
  disabledReason?: string;
}

export type DisableReason = 'gone' | 'failing';

const key = (appId: string) => ({ pk: `APP#${appId}`, sk: 'ENDPOINT' });

export const isDisabled = (s: EndpointState | undefined, url: string) =>
  s?.disabledAt !== undefined && s.url === url;

export async function getEndpointState(
  rt: EndpointDeps,
  appId: string,
): Promise<EndpointState | undefined> {
  const r = await rt.dynamo.doc.send(
    new GetCommand({ TableName: rt.tables.entities, Key: key(appId), ConsistentRead: true }),
  );
  if (!r.Item) return undefined;
  const { pk: _pk, sk: _sk, ...state } = r.Item;
  return state as EndpointState;
}

/** Applies `update` when the stored state is for `url`; otherwise replaces it with `fresh`. */
async function updateForUrl(
  rt: EndpointDeps,
  appId: string,
  url: string,
  update: { expr: string; values: Record<string, unknown> },
  fresh: EndpointState,
): Promise<EndpointState> {
  try {
    const r = await rt.dynamo.doc.send(
      new UpdateCommand({
        TableName: rt.tables.entities,
        Key: key(appId),
        UpdateExpression: update.expr,
        ConditionExpression: 'attribute_not_exists(pk) OR #url = :url',
        ExpressionAttributeNames: { '#url': 'url' },
        ExpressionAttributeValues: { ...update.values, ':url': url, ':app': appId },
        ReturnValues: 'ALL_NEW',
      }),
    );
    const { pk: _pk, sk: _sk, ...state } = r.Attributes ?? {};
    return state as EndpointState;
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
  await rt.dynamo.doc.send(
    new PutCommand({ TableName: rt.tables.entities, Item: { ...key(appId), ...fresh } }),
  );
  return fresh;
}

/** A 2xx: the endpoint is healthy (and enabled again, if an operator's resend got through). */
export function markSuccess(
  rt: EndpointDeps,
  appId: string,
  url: string,
  at: string,
): Promise<EndpointState> {
  return updateForUrl(
    rt,
    appId,
    url,
    {
      expr: 'SET #url = :url, appId = :app, lastSuccessAt = :at REMOVE failingSince, disabledAt, disabledReason',
      values: { ':at': at },
    },
    { appId, url, lastSuccessAt: at },
  );
}

/** A failure: starts the failing streak unless one is running. Returns the state after. */
export function markFailure(
  rt: EndpointDeps,
  appId: string,
  url: string,
  at: string,
): Promise<EndpointState> {
  return updateForUrl(
    rt,
    appId,
    url,
    {
      expr: 'SET #url = :url, appId = :app, failingSince = if_not_exists(failingSince, :at)',
      values: { ':at': at },
    },
    { appId, url, failingSince: at },
  );
}

/**
 * Disables the endpoint and queues the e-mail to the app's contact through the outbox (both
 * in one transaction, so the notification cannot be lost). A `failing` disable is conditional
 * on the streak the caller saw still running, so a success elsewhere meanwhile prevents it.
 * Returns false when it was already disabled or the state moved on.
 */
export async function disableEndpoint(
  rt: EndpointDeps,
  app: Pick<App, 'appId' | 'contactEmail' | 'webhookUrl'>,
  reason: DisableReason,
  at: string,
  failingSince?: string,
): Promise<boolean> {
  const cond = ['#url = :url', 'attribute_not_exists(disabledAt)'];
  const values: Record<string, unknown> = { ':url': app.webhookUrl, ':at': at, ':reason': reason };
  if (reason === 'failing') {
    cond.push('failingSince = :since');
    values[':since'] = failingSince;
  }
  const id = `ntf_${ulid()}`;
  try {
    await rt.outbox.commit(
      [
        {
          Update: {
            TableName: rt.tables.entities,
            Key: key(app.appId),
            UpdateExpression: 'SET disabledAt = :at, disabledReason = :reason',
            ConditionExpression: cond.join(' AND '),
            ExpressionAttributeNames: { '#url': 'url' },
            ExpressionAttributeValues: values,
          },
        },
      ],
      [
        {
          id,
          topic: rt.topics.notifications,
          key: app.appId,
          value: JSON.stringify({
            id,
            type: 'endpoint.disabled',
            appId: app.appId,
            to: app.contactEmail,
            reason,
            url: app.webhookUrl,
            disabledAt: at,
          }),
          createdAtMs: Date.parse(at),
        },
      ],
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}
