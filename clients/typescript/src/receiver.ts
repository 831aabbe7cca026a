import { createClient, type SvcClient } from './client.js';
import { WebhookVerificationError } from './errors.js';
import type { components } from './openapi.gen.js';
import {
  verifyWebhook,
  type ConsentEvent,
  type HeadersLike,
  type VerifyOptions,
} from './webhooks.js';

/**
 * The receiver behind the Express, Fastify and Next.js adapters: verify, parse, drop what is
 * older than what was handled, call the app's handler, post the postback the event asks for.
 */

type PostbackBody = components['schemas']['PostServerConsentActionRequest'];

/** What the handler did, posted back for events that need a postback (docs/api.md, Postbacks). */
export interface HandlerResult {
  /** Default `processed` (`deleted` for `data.deleted`). `failed` needs a `remark`. */
  status?: PostbackBody['status'];
  /** Default `none`. */
  risk?: PostbackBody['risk'];
  remark?: string;
  tags?: string[];
  actions?: { type: string; result: string }[];
}

export interface HandlerContext {
  /** `webhook-id`: the dispatch id, the same on every attempt of this delivery. */
  dispatchId: string;
  signal?: AbortSignal;
}

/** The app's handler. A throw answers 500, so the service delivers the event again later. */
export type EventHandler = (
  event: ConsentEvent,
  ctx: HandlerContext,
) => Promise<HandlerResult | void> | HandlerResult | void;

/**
 * The last sequence handled per consent (docs/webhooks.md, Ordering). Keep it where your app
 * keeps its state; the in-memory default is lost on restart and not shared between processes.
 */
export interface SequenceStore {
  /** The last sequence handled for the consent; 0 when none. */
  last(consentId: string): Promise<number>;
  /** Records `sequence` as handled; never lowers what is stored. */
  record(consentId: string, sequence: number): Promise<void>;
}

export class MemorySequenceStore implements SequenceStore {
  private readonly seen = new Map<string, number>();
  async last(consentId: string): Promise<number> {
    return this.seen.get(consentId) ?? 0;
  }
  async record(consentId: string, sequence: number): Promise<void> {
    this.seen.set(consentId, Math.max(sequence, this.seen.get(consentId) ?? 0));
  }
}

export interface ReceiverOptions extends VerifyOptions {
  secretKey: string;
  handler: EventHandler;
  sequences?: SequenceStore;
  /**
   * Posts the postbacks; by default a client on the origin of the event's `postback.url`
   * with `secretKey`.
   */
  client?: SvcClient;
}

/** What to answer the service: a status and a JSON body. */
export interface ReceiverAnswer {
  status: number;
  body: { received: boolean; outcome: 'handled' | 'dropped' | 'duplicate'; error?: string };
}

export type Receiver = (
  rawBody: string | Uint8Array,
  headers: HeadersLike,
  signal?: AbortSignal,
) => Promise<ReceiverAnswer>;

const POSTBACK_PATH = '/api/v1/server/consent/action';

export function createReceiver(o: ReceiverOptions): Receiver {
  const sequences = o.sequences ?? new MemorySequenceStore();
  // One event per consent at a time in this process, so two deliveries of one consent cannot
  // both pass the sequence check before either is recorded.
  const tails = new Map<string, Promise<unknown>>();
  const serially = <T>(key: string, f: () => Promise<T>): Promise<T> => {
    const run = (tails.get(key) ?? Promise.resolve()).then(f, f);
    const tail = run.catch(() => undefined);
    tails.set(key, tail);
    void tail.then(() => tails.get(key) === tail && tails.delete(key));
    return run;
  };

  /** The postback of an event that asks for one (`data.postback`); nothing for the others. */
  async function post(event: ConsentEvent, dispatchId: string, r: HandlerResult): Promise<void> {
    const url = event.data.postback?.url;
    if (!url) return;
    const client =
      o.client ??
      createClient({
        baseUrl: url.slice(0, url.length - POSTBACK_PATH.length),
        secretKey: o.secretKey,
      });
    const body: PostbackBody = {
      dispatchId,
      referenceId: event.data.referenceId,
      status: r.status ?? (event.type === 'data.deleted' ? 'deleted' : 'processed'),
      risk: r.risk ?? 'none',
      completedAt: new Date().toISOString(),
      tags: r.tags ?? [],
      actions: r.actions ?? [],
      ...(r.remark !== undefined ? { remark: r.remark } : {}),
    };
    await client.post(POSTBACK_PATH, { body });
  }

  return async (rawBody, headers, signal) => {
    let event: ConsentEvent;
    try {
      event = verifyWebhook(rawBody, headers, o.secretKey, o);
    } catch (err) {
      if (err instanceof WebhookVerificationError)
        return { status: 401, body: { received: false, outcome: 'dropped', error: err.message } };
      throw err;
    }
    const dispatchId = String(
      typeof (headers as Headers).get === 'function'
        ? (headers as Headers).get('webhook-id')
        : (headers as Record<string, unknown>)['webhook-id'],
    );
    const { consentId, sequence } = event.data;
    try {
      return await serially(consentId, async (): Promise<ReceiverAnswer> => {
        const last = await sequences.last(consentId);
        if (sequence === last)
          return { status: 200, body: { received: true, outcome: 'duplicate' } };
        if (sequence < last) {
          // data.state of the later event already holds this one's effect; its postback is owed.
          await post(event, dispatchId, {
            remark: `superseded by sequence ${last}, already applied`,
          });
          return { status: 200, body: { received: true, outcome: 'dropped' } };
        }
        const result =
          (await o.handler(event, { dispatchId, ...(signal ? { signal } : {}) })) ?? {};
        await post(event, dispatchId, result);
        await sequences.record(consentId, sequence);
        return { status: 200, body: { received: true, outcome: 'handled' } };
      });
    } catch (err) {
      return {
        status: 500,
        body: { received: false, outcome: 'dropped', error: (err as Error).message },
      };
    }
  };
}
