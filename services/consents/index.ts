import { Router, type Response } from 'express';
import type { z } from 'zod';
import {
  createUserConsent,
  getUserConsent,
  updateUserConsent,
  withdrawUserConsent,
  type UserRecord,
  type WriteContext,
} from '../../shared/domain/consent/index.js';
import { noteActivity } from '../../shared/domain/consent/activity.js';
import type { ApiKeyScope } from '../../shared/domain/types.js';
import { AppError } from '../../shared/errors.js';
import { requireApiKey } from '../../shared/http/auth.js';
import { idempotency } from '../../shared/http/idempotency.js';
import { appOf, abandonedBy, locals } from '../../shared/http/locals.js';
import type { RouteDoc } from '../../shared/http/openapi.js';
import { rateLimit } from '../../shared/http/ratelimit.js';
import { parseBody } from '../../shared/http/validate.js';
import type { ServiceModule } from '../../shared/module.js';
import { receiptDisposition, receiptIssuer } from '../../shared/receipts/issue.js';
import { receiptSchema } from '../../shared/receipts/schema.js';
import type { Runtime } from '../../shared/runtime.js';
import { mountGrievanceRoutes } from './grievances.js';
import {
  createBody,
  recordResponse,
  updateBody,
  userId as userIdSchema,
  writeResponse,
  type writeReceipt,
} from './schemas.js';
import { mountParentalRoutes } from './parental.js';

/** The consent record API (docs/api.md, Consent record API): `Authorization: Bearer svc_ak_…`. */

export const CONSENTS_PREFIX = '/api/v1/consents';

function writeContext(rt: Runtime, res: Response): WriteContext {
  const app = appOf(res);
  return {
    rt,
    app,
    actor: { source: 'api', credential: locals(res).apiKey?.id ?? 'apiKey' },
    signal: abandonedBy(res),
  };
}

/** A path userId that could never have been stored names no record: 404, like an unknown one. */
function pathUserId(raw: unknown): string {
  const r = userIdSchema.safeParse(raw);
  if (!r.success) throw new AppError('SVC_NOT_FOUND', 'No consent record for this user');
  return r.data;
}

const location = (userId: string) => `${CONSENTS_PREFIX}/${encodeURIComponent(userId)}`;

/**
 * What a write answers. A key that may also read (consents:read) gets the whole record; a
 * write-only key gets a receipt of what it did, never the stored e-mail or the state of
 * purposes it did not send, so `PUT {}` or `DELETE` cannot serve as a read.
 */
function answer(res: Response, record: UserRecord): UserRecord | z.infer<typeof writeReceipt> {
  if (locals(res).apiKey?.scopes.includes('consents:read')) return record;
  return {
    userId: record.userId,
    referenceId: record.referenceId,
    transactionId: record.transactionId,
    updatedAt: record.updatedAt,
  };
}

const common = {
  401: { description: 'Missing, wrong or revoked API key' },
  403: { description: 'The API key lacks the scope' },
  429: { description: 'Rate limited' },
};

export const consentsService: ServiceModule = {
  name: 'consents',
  mount(app, rt) {
    // Its own paths (/transactions/…), which no route of the record API below matches.
    mountParentalRoutes(app, rt);
    const r = Router();
    // Rate limit before idempotency, so a 429 is never stored as the key's answer.
    const read = [requireApiKey(rt, 'consents:read'), rateLimit(rt)];
    const write = [requireApiKey(rt, 'consents:write'), rateLimit(rt), idempotency(rt, 'consents')];
    const doc = (d: Omit<RouteDoc, 'tag' | 'security'>, scope: ApiKeyScope) =>
      rt.docs.add({
        ...d,
        summary: `${d.summary} (scope ${scope})`,
        path: `${CONSENTS_PREFIX}${d.path}`,
        tag: 'Consent records',
        security: ['apiKey'],
      });

    r.post('/', ...write, async (req, res) => {
      const body = parseBody(createBody, req.body);
      const record = await createUserConsent(writeContext(rt, res), body);
      res.status(201).location(location(record.userId)).json(answer(res, record));
    });
    doc(
      {
        method: 'post',
        path: '',
        summary: 'Create a user’s consent record, or link an earlier widget capture (consentId)',
        body: createBody,
        example: {
          userId: 'user-42',
          email: 'asha@example.com',
          consents: { analytics: true, marketing: true },
        },
        responses: {
          201: {
            description: 'Created; Location names the record (a receipt without consents:read)',
            schema: writeResponse,
          },
          ...common,
          404: { description: 'Unknown consentId' },
          409: { description: 'The user already has a record, or consentId is linked elsewhere' },
          422: { description: 'Invalid body or undeclared purpose' },
        },
      },
      'consents:write',
    );

    r.get('/:userId', ...read, async (req, res) => {
      const record = await getUserConsent(rt, appOf(res), pathUserId(req.params.userId));
      if (!record) throw new AppError('SVC_NOT_FOUND', 'No consent record for this user');
      noteActivity(rt, appOf(res), record.referenceId);
      res.json(record);
    });
    doc(
      {
        method: 'get',
        path: '/{userId}',
        summary: 'Read a user’s consent record',
        responses: {
          200: { description: 'The record', schema: recordResponse },
          ...common,
          404: { description: 'No record for this user' },
        },
      },
      'consents:read',
    );

    // The receipt of the user's current transaction (the one the record shows).
    const issueReceipt = receiptIssuer(rt);
    r.get('/:userId/receipt', ...read, async (req, res) => {
      const app = appOf(res);
      const record = await getUserConsent(rt, app, pathUserId(req.params.userId));
      const receipt = record && (await issueReceipt(app, record.transactionId));
      if (!receipt) throw new AppError('SVC_NOT_FOUND', 'No consent record for this user');
      res.set({
        'Cache-Control': 'no-store',
        'Content-Disposition': receiptDisposition(receipt.transactionId),
      });
      res.json(receipt);
    });
    doc(
      {
        method: 'get',
        path: '/{userId}/receipt',
        summary: 'A signed consent receipt of the user’s current transaction (docs/receipts.md)',
        responses: {
          200: { description: 'The receipt', schema: receiptSchema },
          ...common,
          404: { description: 'No record for this user' },
        },
      },
      'consents:read',
    );

    r.put('/:userId', ...write, async (req, res) => {
      const id = pathUserId(req.params.userId);
      const body = parseBody(updateBody, req.body);
      res.json(answer(res, await updateUserConsent(writeContext(rt, res), id, body)));
    });
    doc(
      {
        method: 'put',
        path: '/{userId}',
        summary: 'Change purposes (those not named keep their state) and/or the e-mail',
        body: updateBody,
        example: { consents: { marketing: false } },
        responses: {
          200: {
            description: 'The record (a receipt without consents:read)',
            schema: writeResponse,
          },
          ...common,
          404: { description: 'No record for this user' },
          409: { description: 'A purpose cannot be granted (erased or expired)' },
          422: { description: 'Invalid body or undeclared purpose' },
        },
      },
      'consents:write',
    );

    r.delete('/:userId', ...write, async (req, res) => {
      const record = await withdrawUserConsent(
        writeContext(rt, res),
        pathUserId(req.params.userId),
      );
      res.json(answer(res, record));
    });
    doc(
      {
        method: 'delete',
        path: '/{userId}',
        summary: 'Withdraw every purpose (repeating is harmless and emits nothing)',
        responses: {
          200: {
            description: 'The record, all purposes withdrawn (a receipt without consents:read)',
            schema: writeResponse,
          },
          ...common,
          404: { description: 'No record for this user' },
        },
      },
      'consents:write',
    );

    app.use(CONSENTS_PREFIX, r);
    mountGrievanceRoutes(app, rt);
  },
};
