import { z } from 'zod';
import { positiveInt } from '../env.js';

/** DynamoDB: an endpoint (DynamoDB Local), or AWS_REGION for AWS; neither: the embedded store. */
export const storageSettings = {
  DYNAMODB_ENDPOINT: z.string().url().optional(),
  AWS_REGION: z.string().optional(),
  TABLE_PREFIX: z.string().default('svc_'),
  /** A request with no answer after this long fails (and is retried as transient). */
  DYNAMODB_REQUEST_TIMEOUT_MS: positiveInt(2_000),
};
