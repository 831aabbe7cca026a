import { ulid } from 'ulid';
import type {
  PostbackBody,
  PostbackMessage,
  PostbackReceipt,
} from '../domain/compliance/postback.js';
import type { App } from '../domain/types.js';
import { AppError } from '../errors.js';
import { acceptPostbackItem } from '../storage/ledger/summary.js';
import { cancellationReasons, isConditionFailure } from '../storage/dynamo.js';
import type { Outbox } from '../storage/outbox/outbox.js';
import { backoffMs } from '../backoff.js';
import type { BaseConfig } from '../config.js';
import { findDispatch, type FindDispatchDeps } from './dispatch.js';

/**
 * What accepting a postback uses: the ledger (its dispatch, and the count moved with the
 * commit), the outbox and the postbacks topic, and the cap per dispatch; a Runtime is one.
 */
export interface AcceptDeps extends FindDispatchDeps {
  config: FindDispatchDeps['config'] & Pick<BaseConfig, 'POSTBACK_MAX_PER_DISPATCH'>;
  outbox: Pick<Outbox, 'commit'>;
  topics: { postbacks: string };
}

/** How far `completedAt` may run ahead of our clock: app clocks drift, the future does not happen. */
export const COMPLETED_AT_MAX_SKEW_MS = 5 * 60_000;

const invalid = (path: string, message: string, detail = 'The body is not valid') =>
  new AppError('SVC_VALIDATION_FAILED', detail, { errors: [{ path, message }] });

/**
 * Past POSTBACK_MAX_PER_DISPATCH the dispatch takes no more postbacks, ever: no Retry-After,
 * since waiting does not help (the ones accepted are all kept in the ledger).
 */
const capped = (max: number) =>
  new AppError(
    'SVC_RATE_LIMITED',
    `This dispatch has had its ${max} postbacks; no more are accepted for it`,
  );

/** True when a transaction was cancelled only because another one held the same item. */
function lostToContention(err: unknown): boolean {
  return cancellationReasons(err)?.contention === true;
}

/**
 * Accepts one postback of the app (docs/api.md, Postbacks): checks it against its dispatch and
 * hands it to the compliance worker through the outbox. The postback API's handler and the
 * sandbox's postback simulator (services/admin/sandbox.ts) both come through here, so a
 * simulated postback is checked, counted and flagged exactly like a real one.
 */
export async function acceptPostback(
  rt: AcceptDeps,
  app: Pick<App, 'appId'>,
  body: PostbackBody,
  receivedAt: Date,
): Promise<PostbackReceipt> {
  if (Date.parse(body.completedAt) > receivedAt.getTime() + COMPLETED_AT_MAX_SKEW_MS)
    throw invalid('/completedAt', 'is in the future');
  const dispatch = await findDispatch(rt, body.dispatchId);
  // Another app's dispatch answers exactly like an unknown one: ids never leak.
  if (!dispatch || dispatch.appId !== app.appId)
    throw new AppError('SVC_NOT_FOUND', 'No such dispatch');
  if (!dispatch.postbackRequired)
    throw new AppError('SVC_CONFLICT', `A ${dispatch.event} webhook needs no postback`);
  if (dispatch.referenceId !== body.referenceId)
    throw invalid(
      '/referenceId',
      'does not match the dispatch',
      'The referenceId is not the one this dispatch was sent for',
    );
  const max = rt.config.POSTBACK_MAX_PER_DISPATCH;
  if (dispatch.postbacksAccepted >= max) throw capped(max);

  const postbackId = `pb_${ulid(receivedAt.getTime())}`;
  const message: PostbackMessage = {
    type: 'postback',
    ...body,
    appId: app.appId,
    postbackId,
    receivedAt: receivedAt.toISOString(),
  };
  // Through the outbox: once we answer 202 the postback survives a Kafka outage. The
  // dispatch's count of accepted postbacks moves in the same transaction, so concurrent
  // postbacks can never pass the cap.
  const commit = () =>
    rt.outbox.commit(
      [acceptPostbackItem(rt, dispatch.dispatchId, max)],
      [
        {
          id: postbackId,
          topic: rt.topics.postbacks,
          key: dispatch.dispatchId,
          value: JSON.stringify(message),
          createdAtMs: receivedAt.getTime(),
        },
      ],
    );
  for (let attempt = 1; ; attempt++) {
    try {
      await commit();
      break;
    } catch (err) {
      if (isConditionFailure(err)) throw capped(max);
      // Another transaction (the worker's, or a concurrent postback) held the item.
      if (!lostToContention(err)) throw err;
      if (attempt === 5)
        throw new AppError('SVC_UNAVAILABLE', 'The dispatch is busy; retry', {
          retryAfterS: 1,
          cause: err,
        });
      await new Promise((r) => setTimeout(r, backoffMs(attempt, { baseMs: 20, jitter: 'full' })));
    }
  }
  const receipt: PostbackReceipt = {
    dispatchId: dispatch.dispatchId,
    receivedAt: message.receivedAt,
    postbackId,
  };
  return receipt;
}
