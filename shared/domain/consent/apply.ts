import { AppError, type FieldError } from '../../errors.js';
import type { ConsentRecord, RecordChange, StoredTransaction } from './model.js';
import { transition, type RecordOperation } from './states.js';

/**
 * Pure application of operations to a transaction's records. All-or-nothing: if any targeted
 * record refuses the operation (409), nothing is applied, so the transaction never ends up
 * half granted.
 */

export interface Applied {
  records: ConsentRecord[];
  /** Only the records whose state changed (or that were created); empty for a no-op. */
  changes: RecordChange[];
}

function refused(errors: FieldError[]): AppError {
  return new AppError(
    'SVC_CONFLICT',
    errors.length === 1 ? errors[0]!.message : 'The operation is not allowed for some records',
    { errors },
  );
}

/** Applies `op` to the records named by `recordIds`, or to every record when omitted. */
export function applyOperation(
  records: readonly ConsentRecord[],
  op: RecordOperation,
  now: string,
  recordIds?: ReadonlySet<string>,
): Applied {
  const errors: FieldError[] = [];
  const changes: RecordChange[] = [];
  const next = records.map((r, i) => {
    if (recordIds && !recordIds.has(r.recordId)) return r;
    return step(r, op, now, { errors, changes }, (reason) => ({
      path: `/records/${i}`,
      message: `${r.purpose}: ${reason}`,
    }));
  });
  if (errors.length > 0) throw refused(errors);
  return { records: next, changes };
}

/**
 * The record API's `consents` map on top of existing records: `true` grants, `false` revokes
 * (a never-granted purpose stays denied); a purpose not yet present becomes a new record,
 * granted or denied. Purposes not named keep their state.
 */
export function applyPreferences(
  records: readonly ConsentRecord[],
  prefs: Readonly<Record<string, boolean>>,
  now: string,
  newRecordId: () => string,
): Applied {
  const errors: FieldError[] = [];
  const changes: RecordChange[] = [];
  const byPurpose = new Map(records.map((r) => [r.purpose, r]));
  const next = records.map((r) => {
    const want = prefs[r.purpose];
    if (want === undefined) return r;
    const op: RecordOperation = want ? 'grant' : 'revoke';
    return step(r, op, now, { errors, changes }, (reason) => ({
      path: `/consents/${r.purpose}`,
      message: reason,
    }));
  });
  if (errors.length > 0) throw refused(errors);
  for (const [purpose, granted] of Object.entries(prefs)) {
    if (byPurpose.has(purpose)) continue;
    const rec: ConsentRecord = {
      recordId: newRecordId(),
      purpose,
      state: granted ? 'granted' : 'denied',
      updatedAt: now,
    };
    next.push(rec);
    changes.push({
      recordId: rec.recordId,
      purpose,
      from: null,
      to: rec.state,
      operation: 'create',
    });
  }
  return { records: next, changes };
}

/**
 * One record through one operation: the record as it is after it, with the change (if any)
 * or the refusal (as `refusal` words it) added to `out`.
 */
function step(
  r: ConsentRecord,
  op: RecordOperation,
  now: string,
  out: { errors: FieldError[]; changes: RecordChange[] },
  refusal: (reason: string) => FieldError,
): ConsentRecord {
  const t = transition(r.state, op);
  if (!t.ok) {
    out.errors.push(refusal(t.reason));
    return r;
  }
  if (!t.changed) return r;
  out.changes.push({
    recordId: r.recordId,
    purpose: r.purpose,
    from: r.state,
    to: t.to,
    operation: op,
  });
  return { ...r, state: t.to, updatedAt: now };
}

/**
 * A transaction captured under a notice that requires verifiable parental consent grants
 * nothing until the app has confirmed the verification (`verify`): any other grant, and any
 * new granted record, is refused (409). Checked here, where every change passes.
 */
export function assertParentalGate(txn: StoredTransaction, changes: readonly RecordChange[]) {
  const status = txn.parental?.status;
  if (status === undefined || status === 'verified') return;
  const grants = changes.filter((c) => c.to === 'granted' && c.operation !== 'verify');
  if (grants.length === 0) return;
  throw new AppError(
    'SVC_CONFLICT',
    status === 'pending'
      ? 'This consent awaits verifiable parental consent; nothing is granted before the app confirms it'
      : 'Verifiable parental consent failed for this consent; capture it again',
    {
      errors: grants.map((c) => ({
        path: `/records/${c.recordId}`,
        message: `${c.purpose}: parental verification ${status}`,
      })),
    },
  );
}
