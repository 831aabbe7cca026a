export {
  createClient,
  SvcClient,
  type Answer,
  type CallOptions,
  type ClientOptions,
  type PagedPaths,
  type PathsOf,
} from './client.js';
export {
  NetworkError,
  ProblemError,
  SvcError,
  TimeoutError,
  WebhookVerificationError,
  type Problem,
  type ProblemCode,
} from './errors.js';
export { DEFAULT_RETRY, type RetryPolicy } from './retry.js';
export {
  verifyWebhook,
  type ConsentEvent,
  type EventOf,
  type EventType,
  type HeadersLike,
  type VerifyOptions,
} from './webhooks.js';
export {
  createReceiver,
  MemorySequenceStore,
  type EventHandler,
  type HandlerContext,
  type HandlerResult,
  type Receiver,
  type ReceiverAnswer,
  type ReceiverOptions,
  type SequenceStore,
} from './receiver.js';
export { expressWebhooks, fastifyWebhooks, nextWebhooks } from './adapters.js';
export type { components, operations, paths, webhooks } from './openapi.gen.js';
