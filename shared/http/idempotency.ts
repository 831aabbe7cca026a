import { createHash } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { keyedHash, type KeyConfig } from '../domain/crypto.js';
import { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import { locals } from './locals.js';

const TTL_S = 24 * 60 * 60;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;
/** Headers worth replaying with the stored body. */
const REPLAYED_HEADERS = ['content-type', 'location', 'retry-after'];

/**
 * Credentials that are shown once (docs/security.md, Idempotency and secrets): secret keys and API
 * keys. They never rest in the idempotency table; the stored answer keeps the prefix and the last 4
 * characters.
 */
const SHOWN_ONCE = /\bsvc_(sk_(?:test_)?|ak_)[0-9A-Za-z]{40}\b/g;
/** Principal tokens (`svc_pt_<claims>.<mac>`): bearer credentials too, never stored. */
const PRINCIPAL_TOKEN = /\bsvc_(pt_)[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g;

/** `svc_sk_…abcd`: enough to tell which key it was, never enough to use it. */
export function maskSecrets(text: string): string {
  const mask = (secret: string, kind: string) => `svc_${kind}…${secret.slice(-4)}`;
  return text.replace(SHOWN_ONCE, mask).replace(PRINCIPAL_TOKEN, mask);
}

/**
 * A route whose answer carries a credential minted for the caller (a principal token) names
 * the fields: they are removed before the answer is stored, and a replay asks `reissue` for
 * fresh ones. `sameClient` says whether the replay comes from the client address that made
 * the first request (compared by keyed hash); the route decides what a stranger gets.
 */
export interface IdempotencyOptions {
  credentials?: {
    fields: readonly string[];
    reissue: (
      answer: Record<string, unknown>,
      ctx: { req: Request; res: Response; sameClient: boolean },
    ) => Promise<Record<string, unknown>>;
  };
}

/** One key's record: pending while its first request runs, then that request's answer. */
export interface IdempotencyRecord {
  pk: string;
  state: 'pending' | 'done';
  requestHash: string;
  status?: number;
  headers?: Record<string, string>;
  body?: string;
  /** Keyed hash of the first request's client address (routes with `credentials` only). */
  client?: string;
  /** Epoch seconds: the record counts as absent after this. */
  expiresAt: number;
}
type Stored = IdempotencyRecord;

/** Where the records are kept (shared/storage/http/idempotency.ts). */
export interface IdempotencyStore {
  /**
   * Claims `pk` with a pending record, unless a record that has not expired at `nowS` holds it:
   * then that record (undefined if it vanished meanwhile).
   */
  begin(
    pk: string,
    pending: Pick<IdempotencyRecord, 'requestHash' | 'client' | 'expiresAt'>,
    nowS: number,
  ): Promise<{ claimed: true } | { claimed: false; prior: IdempotencyRecord | undefined }>;
  /** Stores the answer of the claimed request. */
  finish(
    pk: string,
    answer: { status: number; headers: Record<string, string>; body: string },
  ): Promise<void>;
  /** Drops the claim, so the key may be used again. */
  forget(pk: string): Promise<void>;
}

/** What the middleware uses; a Runtime is one. */
export interface IdempotencyDeps {
  idempotency: IdempotencyStore;
  config: KeyConfig;
  log: Logger;
}

async function replay(
  req: Request,
  res: Response,
  s: Stored,
  o: IdempotencyOptions,
  client: string | undefined,
) {
  for (const [k, v] of Object.entries(s.headers ?? {})) res.setHeader(k, v);
  res.setHeader('Idempotent-Replayed', 'true');
  let body = s.body ?? '';
  if (o.credentials && (s.status ?? 200) < 300 && body !== '') {
    const answer = JSON.parse(body) as Record<string, unknown>;
    const sameClient = s.client !== undefined && s.client === client;
    body = JSON.stringify(await o.credentials.reissue(answer, { req, res, sameClient }));
  }
  res.status(s.status ?? 200).send(body);
}

/** The answer as stored: the route's credential fields removed, any other secret masked. */
function storable(text: string, o: IdempotencyOptions): string {
  if (o.credentials) {
    try {
      const json: unknown = JSON.parse(text);
      if (json !== null && typeof json === 'object' && !Array.isArray(json)) {
        const rest = { ...(json as Record<string, unknown>) };
        for (const f of o.credentials.fields) delete rest[f];
        text = JSON.stringify(rest);
      }
    } catch {
      // not JSON: masked below like any other answer
    }
  }
  return maskSecrets(text);
}

/**
 * The parsed body as text for the request hash; undefined when it nests too deeply for
 * JSON.stringify (a 64 KiB body can hold `[[[…]]]` 30,000 deep, which JSON.parse accepts).
 */
function bodyText(body: unknown): string | undefined {
  try {
    return JSON.stringify(body ?? null);
  } catch (err) {
    if (err instanceof RangeError) return undefined;
    throw err;
  }
}

/**
 * Who holds a record: the API key by id, the principal of a principal token (by keyed hash, so
 * the table holds no referenceId), the operator, the app's server (secret key), the public site
 * key (a capture; `credentials` decides what a replay from another address gets), else the
 * client address. A write-only key cannot replay what a read-write key was answered, nor one
 * principal another's.
 */
function callerOf(rt: IdempotencyDeps, req: Request, res: Response): string {
  const l = locals(res);
  if (l.apiKey) return `ak:${l.apiKey.id}`;
  if (l.principal) return `pt:${keyedHash(rt.config, 'idempotency', l.principal.referenceId)}`;
  if (l.admin) return 'admin';
  if (l.via === 'secretKey') return 'sk';
  if (l.via === 'siteKey') return 'site';
  return `ip:${keyedHash(rt.config, 'ip', req.ip ?? '')}`;
}

const tooDeep = () =>
  new AppError('SVC_VALIDATION_FAILED', 'The body is not valid', {
    errors: [{ path: '/', message: 'nests too deeply' }],
  });

/**
 * `Idempotency-Key` on POST/PUT/PATCH/DELETE (docs/api.md, Idempotency, rate limits and isolation):
 * the first response to a key is stored for 24 h and a repeat gets it back
 * (`Idempotent-Replayed: true`), without applying the request again. A secret key or API key in the answer is stored
 * masked (`maskSecrets`), so a replay shows it masked: a secret is shown once, and only to the
 * first answer. A principal token is never stored either: see `IdempotencyOptions.credentials`.
 * Keys are scoped per app, surface and caller (`callerOf`): another caller's key, even in the same
 * app, is a new key to this one. A repeat with a different method, path or body is 422,
 * one while the first is still running is 409. A 5xx is not stored, so the client can retry with
 * the same key. Goes after authentication.
 */
export function idempotency(
  rt: IdempotencyDeps,
  surface: string,
  o: IdempotencyOptions = {},
): RequestHandler {
  const store = rt.idempotency;
  return async (req, res, next) => {
    const key = req.get('idempotency-key');
    if (key === undefined || !['POST', 'PUT', 'PATCH', 'DELETE'].includes(req.method))
      return next();
    if (!KEY_RE.test(key)) {
      return next(
        new AppError(
          'SVC_VALIDATION_FAILED',
          'Idempotency-Key must be 1-255 visible ASCII characters',
          {
            errors: [{ path: 'header:Idempotency-Key', message: 'invalid' }],
          },
        ),
      );
    }
    const l = locals(res);
    const pk = `${l.app?.appId ?? '-'}#${surface}#${callerOf(rt, req, res)}#${key}`;
    const body = bodyText(req.body);
    if (body === undefined) return next(tooDeep());
    const client = o.credentials ? keyedHash(rt.config, 'ip', req.ip ?? '') : undefined;
    const requestHash = createHash('sha256')
      .update(`${req.method} ${req.originalUrl}\n${body}`)
      .digest('hex');
    let begun: Awaited<ReturnType<IdempotencyStore['begin']>>;
    try {
      const nowS = Math.floor(Date.now() / 1000);
      begun = await store.begin(
        pk,
        { requestHash, ...(client ? { client } : {}), expiresAt: nowS + TTL_S },
        nowS,
      );
    } catch (err) {
      return next(err);
    }
    if (!begun.claimed) {
      const prior = begun.prior;
      if (!prior) return next(new AppError('SVC_CONFLICT', 'Retry the request'));
      if (prior.requestHash !== requestHash) {
        return next(
          new AppError(
            'SVC_VALIDATION_FAILED',
            'This Idempotency-Key was used for a different request',
            {
              errors: [
                { path: 'header:Idempotency-Key', message: 'reused with a different request' },
              ],
            },
          ),
        );
      }
      if (prior.state === 'pending') {
        return next(
          new AppError('SVC_CONFLICT', 'A request with this Idempotency-Key is still in progress', {
            retryAfterS: 1,
          }),
        );
      }
      return replay(req, res, prior, o, client).catch(next);
    }

    // Store the response before it leaves, so a repeat arriving right after sees it.
    const send = res.send.bind(res);
    let stored = false;
    res.send = ((body?: unknown) => {
      if (stored) return send(body);
      stored = true;
      if (
        typeof body === 'object' &&
        body !== null &&
        !Buffer.isBuffer(body) &&
        !res.get('content-type')
      ) {
        res.type('json');
      }
      const text = storable(
        typeof body === 'string' || Buffer.isBuffer(body) ? body.toString() : JSON.stringify(body),
        o,
      );
      const write =
        res.statusCode >= 500
          ? store.forget(pk)
          : store.finish(pk, {
              status: res.statusCode,
              headers: Object.fromEntries(
                REPLAYED_HEADERS.flatMap((h) => {
                  const v = res.getHeader(h);
                  return v === undefined ? [] : [[h, String(v)]];
                }),
              ),
              body: text,
            });
      write
        .catch((err: unknown) =>
          rt.log.warn({ err, pk }, 'could not store the idempotent response'),
        )
        .finally(() => send(body));
      return res;
    }) as typeof res.send;
    next();
  };
}
