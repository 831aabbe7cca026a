import { BatchGetCommand } from '@aws-sdk/lib-dynamodb';
import { AppError, type FieldError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import type { Affected } from './model.js';

/**
 * Checks that every affected principal a breach names is one of the app's, reading the user
 * pointers and principal items in bounded batches (100 keys per BatchGetItem), and returns
 * them by referenceId, each once. Anything unknown refuses the whole request (422) naming the
 * first entries at fault, so a breach is never recorded against a partial or foreign list.
 */

const BATCH_GET = 100;
const MAX_REPORTED = 20;

type Key = { pk: string; sk: string };

async function batchGet(rt: Runtime, keys: Key[]): Promise<Map<string, Record<string, unknown>>> {
  const found = new Map<string, Record<string, unknown>>();
  const unique = [...new Map(keys.map((k) => [k.pk, k])).values()];
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
  rt: Runtime,
  appId: string,
  named: readonly { userId?: string | undefined; referenceId?: string | undefined }[],
  path = '/principals',
): Promise<Affected[]> {
  const userKey = (u: string) => ({ pk: `APP#${appId}#USER#${u}`, sk: 'USER' });
  const refKey = (r: string) => ({ pk: `APP#${appId}#REF#${r}`, sk: 'PRINCIPAL' });
  const users = await batchGet(
    rt,
    named.flatMap((p) => (p.userId !== undefined ? [userKey(p.userId)] : [])),
  );
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
      const u = users.get(userKey(p.userId).pk);
      if (!u) return fault('userId', 'no principal of this app has this userId');
      const ref = String(u.referenceId);
      if (p.referenceId !== undefined && p.referenceId !== ref)
        return fault('referenceId', 'is not the referenceId of this userId');
      out.set(ref, { referenceId: ref, userId: p.userId });
      return;
    }
    const ref = p.referenceId!;
    const item = refs.get(refKey(ref).pk);
    if (!item) return fault('referenceId', 'no principal of this app has this referenceId');
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
