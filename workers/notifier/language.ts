import type { Language } from '../../shared/domain/types.js';
import { loadTransactionAt, queryTransactions } from '../../shared/storage/consents/repository.js';
import { isLanguage } from '../../shared/i18n/index.js';
import type { Runtime } from '../../shared/runtime.js';

/**
 * The language of an e-mail to a principal: the one the message names, else that of the
 * transaction it is about, else that of the principal's newest transaction (the language the
 * principal read the notice in), else English. Record-API transactions have none.
 */
export async function mailLanguage(
  rt: Runtime,
  appId: string,
  referenceId: string,
  hint: { language?: string | undefined; transactionId?: string | undefined },
): Promise<Language> {
  if (isLanguage(hint.language)) return hint.language;
  if (hint.transactionId) {
    const t = await loadTransactionAt(rt, appId, referenceId, hint.transactionId);
    if (isLanguage(t?.language)) return t.language;
  }
  const { items } = await queryTransactions(rt, appId, referenceId, 1);
  const newest = items[0]?.language;
  return isLanguage(newest) ? newest : 'en';
}
