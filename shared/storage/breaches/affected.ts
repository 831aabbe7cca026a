import { BatchGetCommand, type DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';
import { AppError, type FieldError } from '../../errors.js';
import { getReferenceKey } from '../../domain/apps.js';
import { isClaim, keys } from '../consents/repository.js';
import { derivedReferenceId } from '../../domain/ids.js';
import type { Affected } from '../../domain/duties/breaches.js';

/**
 * Checks that every affected principal a breach names is one of the app's, reading the
 * principals (a user's at its derived referenceId, else through its user pointer) in bounded
 * batches (100 keys per BatchGetItem), and returns
 * them by referenceId, each once. Anything unknown refuses the whole request (422) naming the
 * first entries at fault, so a breach is never recorded against a partial or foreign list.
 */

/** What resolving the affected uses; a Runtime is one. */
export type AffectedDeps = Parameters<typeof getReferenceKey>[0] & {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'entities'>;
};

const BATCH_GET = 100;
const MAX_REPORTED = 20;

type Key = { pk: string; sk: string };

async function batchGet(
  rt: AffectedDeps,
  wanted: Key[],
): Promise<Map<string, Record<string, unknown>>> {
  const found = new Map<string, Record<string, unknown>>();
  const unique = [...new Map(wanted.map((k) => [k.pk, k])).values()];
  for (let i = 0; i < unique.length; i += BATCH_GET) {
    let pending: Key[] = unique.slice(i, i + BATCH_GET);
    for (let round = 0; pending.length > 0; round++) {
      if (round > 0) await new Promise((r) => setTimeout(r, Math.min(50 * 2 ** round, 1_000)));
      if (round > 8)
        throw new AppError('SVC_UNAVAILABLE', 'The store is busy; retry', { retryAfterS: 1 });
      const r = await rt.dynamo.doc.send(
        new BatchGetCommand({
          RequestItems: { [rt.tables.entities]: { Keys: pending, ConsistentRead: true } },
        }),
      );
      for (const item of r.Responses?.[rt.tables.entities] ?? []) found.set(String(item.pk), item);
      pending = (r.UnprocessedKeys?.[rt.tables.entities]?.Keys ?? []) as Key[];
    }
  }
  return found;
}

export async function resolveAffected(
  rt: AffectedDeps,
  appId: string,
  named: readonly { userId?: string | undefined; referenceId?: string | undefined }[],
  path = '/principals',
): Promise<Affected[]> {
  const refKey = (r: string) => keys.principal(appId, r);
  // A user is at its derived referenceId (a principal holding its user id and transaction), or,
  // failing that, named by a pointer item (repository.ts, `loadUser`).
  const userIds = [...new Set(named.flatMap((p) => (p.userId !== undefined ? [p.userId] : [])))];
  const key = userIds.length > 0 ? await getReferenceKey(rt, appId) : undefined;
  const derivedOf = new Map(userIds.map((u) => [u, derivedReferenceId(key!, u)]));
  const derived = await batchGet(
    rt,
    [...new Set(derivedOf.values())].map((r) => refKey(r)),
  );
  // Or claimed there for a principal elsewhere (repository.ts, `putClaim`): `claimOf` names it.
  const atDerived = (u: string) => {
    const item = derived.get(refKey(derivedOf.get(u)!).pk);
    return item?.userId === u && (item.userTransactionId !== undefined || isClaim(item))
      ? item
      : undefined;
  };
  const pointers = await batchGet(
    rt,
    userIds.filter((u) => !atDerived(u)).map((u) => keys.user(appId, u)),
  );
  const referenceOf = (u: string): string | undefined => {
    const at = atDerived(u);
    if (at) return isClaim(at) ? String(at.claimOf) : derivedOf.get(u);
    const pointer = pointers.get(keys.user(appId, u).pk);
    return pointer ? String(pointer.referenceId) : undefined;
  };
  const refs = await batchGet(
    rt,
    named.flatMap((p) =>
      p.referenceId !== undefined && p.userId === undefined ? [refKey(p.referenceId)] : [],
    ),
  );
  const errors: FieldError[] = [];
  let faults = 0;
  const out = new Map<string, Affected>();
  named.forEach((p, i) => {
    const fault = (field: string, message: string) => {
      if (faults++ < MAX_REPORTED) errors.push({ path: `${path}/${i}/${field}`, message });
    };
    if (p.userId !== undefined) {
      const ref = referenceOf(p.userId);
      if (ref === undefined) return fault('userId', 'no principal of this app has this userId');
      if (p.referenceId !== undefined && p.referenceId !== ref)
        return fault('referenceId', 'is not the referenceId of this userId');
      out.set(ref, { referenceId: ref, userId: p.userId });
      return;
    }
    const ref = p.referenceId!;
    const item = refs.get(refKey(ref).pk);
    if (!item || isClaim(item))
      return fault('referenceId', 'no principal of this app has this referenceId');
    if (!out.has(ref))
      out.set(ref, {
        referenceId: ref,
        userId: typeof item.userId === 'string' ? item.userId : null,
      });
  });
  if (faults > 0)
    throw new AppError(
      'SVC_VALIDATION_FAILED',
      `${faults} affected principal${faults === 1 ? ' is' : 's are'} not known for this app${faults > MAX_REPORTED ? ` (the first ${MAX_REPORTED} are listed)` : ''}`,
      { errors },
    );
  return [...out.values()];
}
