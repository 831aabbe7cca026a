import type { BaseConfig } from '../config.js';
import type { ConsentDeps } from '../domain/consent/deps.js';
import { getStoredTransaction } from '../domain/consent/index.js';
import { getNotice, type NoticesDeps } from '../domain/notices.js';
import type { App } from '../domain/types.js';
import { KEYS_PATH, signingKeys, type KeyConfig } from '../signing/keys.js';
import { receiptContent, signReceipt, type ConsentReceipt } from './receipt.js';

/**
 * What issuing receipts uses: the consent and notice stores, the signing key and the public
 * base URL (the keys' address); a Runtime is one.
 */
export interface ReceiptDeps extends NoticesDeps, Pick<ConsentDeps, 'consents'> {
  config: KeyConfig & Pick<BaseConfig, 'PUBLIC_BASE_URL' | 'CREDENTIAL_CACHE_TTL_MS'>;
}

/** Issues a receipt of one of an app's transactions (see `receiptIssuer`). */
export type IssueReceipt = (
  app: App,
  transactionId: string,
  referenceId?: string,
) => Promise<ConsentReceipt | undefined>;

/**
 * Receipts signed with the process's key, read now (at mount), so a process that cannot sign
 * (no SVC_SIGNING_KEY in production) fails at start, not at its first receipt. The function
 * answers a signed receipt of one of `app`'s transactions as it stands now (docs/receipts.md), or
 * undefined when the app has no such transaction, or when `referenceId` is given and the
 * transaction is another principal's (the two look the same to the caller). Two reads: the
 * transaction and the notice version it was given under.
 */
export function receiptIssuer(rt: ReceiptDeps, clock: () => Date = () => new Date()): IssueReceipt {
  const key = signingKeys(rt.config).active;
  const keysUrl = `${rt.config.PUBLIC_BASE_URL.replace(/\/+$/, '')}${KEYS_PATH}`;
  return async (app, transactionId, referenceId) => {
    const t = await getStoredTransaction(rt, app.appId, transactionId);
    if (!t || (referenceId !== undefined && t.referenceId !== referenceId)) return undefined;
    const notice =
      t.noticeId !== null && t.noticeVersion !== null
        ? await getNotice(rt, app.appId, t.noticeId, t.noticeVersion)
        : undefined;
    return signReceipt(key, receiptContent(t, notice, app, clock()), keysUrl);
  };
}

/** `attachment` with a file name, so a plain link or `curl -OJ` saves it as a file. */
export const receiptDisposition = (transactionId: string) =>
  `attachment; filename="consent-receipt-${transactionId.replace(/[^0-9A-Za-z-]/g, '')}.json"`;
