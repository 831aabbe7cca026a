import { AppError, type FieldError } from '../../errors.js';
import type { ConsentDeps } from './deps.js';
import { declaredPurposes } from '../notices.js';
import type { App } from '../types.js';
import { applyOperation, applyPreferences } from './apply.js';
import { DEFAULT_VALIDITY_DAYS, MAX_RECORDS, type StoredTransaction } from './model.js';
import {
  createWithPrincipal,
  mutateTransaction,
  recordIdsFor,
  type WriteContext,
} from './writer.js';

/** The record API (docs/api.md, Consent record API): one consent record per user of an app. */

const DAY_MS = 86_400_000;

export interface UserRecord {
  userId: string;
  email: string | null;
  referenceId: string;
  consents: Record<string, boolean>;
  /** `pending`: nothing granted, some purposes await verifiable parental consent. */
  status: 'active' | 'withdrawn' | 'pending';
  transactionId: string;
  createdAt: string;
  updatedAt: string;
  expiresAt: string;
}

function toUserRecord(userId: string, email: string | undefined, t: StoredTransaction): UserRecord {
  const consents = Object.fromEntries(t.records.map((r) => [r.purpose, r.state === 'granted']));
  return {
    userId,
    email: email ?? null,
    referenceId: t.referenceId,
    consents,
    status: Object.values(consents).some(Boolean)
      ? 'active'
      : t.records.some((r) => r.state === 'pending')
        ? 'pending'
        : 'withdrawn',
    transactionId: t.transactionId,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
    expiresAt: t.expiresAt,
  };
}

/** Where the app declared purposes (its notices), only those may be used (422 otherwise). */
async function assertDeclared(rt: ConsentDeps, appId: string, consents: Record<string, boolean>) {
  const declared = await declaredPurposes(rt, appId);
  if (!declared) return;
  const errors: FieldError[] = Object.keys(consents)
    .filter((p) => !declared.has(p))
    .map((p) => ({ path: `/consents/${p}`, message: 'is not a purpose declared by any notice' }));
  if (errors.length > 0) throw new AppError('SVC_VALIDATION_FAILED', 'Unknown purpose', { errors });
}

function assertSize(count: number) {
  if (count > MAX_RECORDS)
    throw new AppError('SVC_VALIDATION_FAILED', 'Too many purposes', {
      errors: [{ path: '/consents', message: `at most ${MAX_RECORDS} purposes per user` }],
    });
}

const noRecord = () => new AppError('SVC_NOT_FOUND', 'No consent record for this user');
const taken = () => new AppError('SVC_CONFLICT', 'This user already has a consent record; use PUT');

export interface CreateUserInput {
  userId: string;
  email: string;
  consents: Record<string, boolean>;
  consentId?: string | undefined;
}

export async function createUserConsent(
  ctx: WriteContext,
  input: CreateUserInput,
): Promise<UserRecord> {
  const { rt, app } = ctx;
  await assertDeclared(rt, app.appId, input.consents);
  // No read first: the conditional put of the user's principal (or pointer item) answers 409 for
  // an existing user, so the common case (a new user) costs its two puts and nothing else.
  if (input.consentId !== undefined)
    return linkCapture(ctx, { ...input, consentId: input.consentId });
  if (Object.keys(input.consents).length === 0)
    throw new AppError('SVC_VALIDATION_FAILED', 'The body is not valid', {
      errors: [{ path: '/consents', message: 'name at least one purpose (or send consentId)' }],
    });
  assertSize(Object.keys(input.consents).length);
  const txn = await createWithPrincipal(ctx, {
    userId: input.userId,
    principal: { userId: input.userId, email: input.email },
    build: (_ref, now, transactionId) => {
      return {
        appId: app.appId,
        transactionId,
        userId: input.userId,
        processId: null,
        noticeId: null,
        noticeVersion: null,
        language: null,
        source: 'api',
        createdAt: now,
        updatedAt: now,
        expiresAt: new Date(Date.parse(now) + DEFAULT_VALIDITY_DAYS * DAY_MS).toISOString(),
        records: applyPreferences([], input.consents, now, recordIdsFor(transactionId)).records,
      };
    },
  });
  return toUserRecord(input.userId, input.email, txn);
}

/**
 * Links an earlier widget capture (its transaction and principal) to the user, then applies
 * `consents` on top. The transaction, the principal and the user's claim are written together,
 * each conditional, so two users can never claim one capture.
 */
async function linkCapture(
  ctx: WriteContext,
  input: CreateUserInput & { consentId: string },
): Promise<UserRecord> {
  const { rt, app } = ctx;
  const store = rt.consents;
  const found = await store.loadTransaction(app.appId, input.consentId);
  if (!found) throw new AppError('SVC_NOT_FOUND', 'Unknown consentId');
  const linkedElsewhere = new AppError('SVC_CONFLICT', 'This consentId is linked to another user');
  const derivedRef = await store.derivedReferenceOf(app.appId, input.userId);
  // The user is claimed at its derived referenceId when nothing is there; by a pointer item
  // only beside another principal there.
  let claimThere = false;
  if (derivedRef !== found.referenceId) {
    const there = await store.loadPrincipalKey(app.appId, derivedRef);
    if (there?.userId === input.userId) throw taken();
    claimThere = there === undefined;
  }
  const { txn } = await mutateTransaction(
    ctx,
    () => store.loadTransactionAt(app.appId, found.referenceId, found.transactionId),
    (t, now) => {
      if (t.userId !== undefined) throw t.userId === input.userId ? taken() : linkedElsewhere;
      const applied = applyPreferences(
        t.records,
        input.consents,
        now,
        recordIdsFor(t.transactionId, t.records),
      );
      assertSize(applied.records.length);
      const link = {
        appId: app.appId,
        userId: input.userId,
        referenceId: t.referenceId,
        transactionId: t.transactionId,
        createdAt: now,
      };
      return {
        ...applied,
        patch: { userId: input.userId },
        force: true,
        extra: [
          {
            write: {
              op: 'link-user' as const,
              referenceId: t.referenceId,
              userId: input.userId,
              email: input.email,
              at: now,
            },
            conflict: 'This consentId belongs to a person already linked to another user',
          },
          // A claim is conditional on nothing being at the derived referenceId, a pointer item
          // on there being none: either way a user claimed meanwhile is 409.
          {
            write: claimThere
              ? { op: 'claim-user' as const, derivedRef, user: link }
              : { op: 'point-user' as const, user: link },
            conflict: taken().message,
          },
          // The user is not claimed at its derived referenceId either (writer.ts,
          // createWithPrincipal); that principal is this one's only by a 1-in-2^40 chance, and
          // then the update above already requires it to hold no user id.
          ...(derivedRef === t.referenceId || claimThere
            ? []
            : [
                {
                  write: {
                    op: 'not-derived-user' as const,
                    derivedRef,
                    userId: input.userId,
                  },
                  conflict: taken().message,
                },
              ]),
        ],
      };
    },
  );
  return toUserRecord(input.userId, input.email, txn);
}

/** The user and its principal (read once: by the lookup when it found the user through it). */
async function withPrincipal(rt: ConsentDeps, app: App, userId: string) {
  const found = await rt.consents.findUser(app.appId, userId);
  if (!found) return undefined;
  const { user } = found;
  return {
    user,
    principal: found.principal ?? rt.consents.loadPrincipal(app.appId, user.referenceId),
  };
}

async function current(rt: ConsentDeps, app: App, userId: string) {
  const found = await withPrincipal(rt, app, userId);
  if (!found) throw noRecord();
  return found;
}

export async function getUserConsent(
  rt: ConsentDeps,
  app: App,
  userId: string,
): Promise<UserRecord | undefined> {
  const found = await withPrincipal(rt, app, userId);
  if (!found) return undefined;
  const { user } = found;
  const [txn, principal] = await Promise.all([
    rt.consents.loadTransactionAt(app.appId, user.referenceId, user.transactionId),
    found.principal,
  ]);
  if (!txn) return undefined;
  return toUserRecord(userId, principal?.email, txn);
}

export async function updateUserConsent(
  ctx: WriteContext,
  userId: string,
  input: { consents?: Record<string, boolean> | undefined; email?: string | undefined },
): Promise<UserRecord> {
  const { rt, app } = ctx;
  const consents = input.consents ?? {};
  await assertDeclared(rt, app.appId, consents);
  const { user, principal: loaded } = await current(rt, app, userId);
  const principal = await loaded;
  const emailChange = input.email !== undefined && input.email !== principal?.email;
  const { txn } = await mutateTransaction(
    ctx,
    () => rt.consents.loadTransactionAt(app.appId, user.referenceId, user.transactionId),
    (t, now) => {
      const applied = applyPreferences(
        t.records,
        consents,
        now,
        recordIdsFor(t.transactionId, t.records),
      );
      assertSize(applied.records.length);
      if (!emailChange) return applied;
      return {
        ...applied,
        force: true,
        extra: [
          {
            write: {
              op: 'set-email' as const,
              referenceId: t.referenceId,
              email: input.email!,
              at: now,
            },
          },
        ],
      };
    },
  );
  return toUserRecord(userId, emailChange ? input.email : principal?.email, txn);
}

/** Withdraws every purpose; a repeat changes nothing and emits nothing. */
export async function withdrawUserConsent(ctx: WriteContext, userId: string): Promise<UserRecord> {
  const { rt, app } = ctx;
  const { user, principal: loaded } = await current(rt, app, userId);
  const [{ txn }, principal] = await Promise.all([
    mutateTransaction(
      ctx,
      () => rt.consents.loadTransactionAt(app.appId, user.referenceId, user.transactionId),
      (t, now) => applyOperation(t.records, 'revoke', now),
    ),
    loaded,
  ]);
  return toUserRecord(userId, principal?.email, txn);
}
