/** The consent domain: what services and workers import. */
export { captureConsent, type CaptureInput, type CaptureResult } from './capture.js';
export {
  bulkOperate,
  getStoredTransaction,
  getTransaction,
  listTransactions,
  operateOnRecord,
  operateOnTransaction,
  MAX_BULK_IDS,
  PUBLIC_OPERATIONS,
  type BulkResult,
  type BulkTargets,
  type PublicOperation,
} from './manage.js';
export {
  createUserConsent,
  getUserConsent,
  updateUserConsent,
  withdrawUserConsent,
  type UserRecord,
} from './userConsents.js';
export { consentEventSchema, type ConsentEvent, type EventType } from './events.js';
export {
  MAX_RECORDS,
  purposeName,
  recordSchema,
  transactionSchema,
  type Actor,
  type StoredTransaction,
  type TransactionView,
} from './model.js';
export {
  deriveStatus,
  transition,
  TRANSACTION_STATUSES,
  type RecordState,
  type TransactionStatus,
} from './states.js';
export type { WriteContext } from './writer.js';
