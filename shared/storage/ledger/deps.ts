import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { TableNames } from '../../../infra/definitions/tables.js';

/**
 * What the ledger's store functions use, declared structurally so a caller holding the whole
 * runtime passes it as it is.
 */
export interface LedgerDeps {
  dynamo: { doc: DynamoDBDocumentClient };
  tables: Pick<TableNames, 'ledger' | 'timers' | 'checkpoints' | 'entities'>;
  config: {
    LEDGER_CHECKPOINT_PERIOD_MS: number;
    LEDGER_CHECKPOINT_LAG_MS: number;
    LEDGER_CHANGE_STAMP_MARGIN_MS: number;
    TIMER_SHARDS: number;
  };
}
