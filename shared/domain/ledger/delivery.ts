/** A dispatch's delivery, as the ledger records it and the dispatcher's schedule moves it. */
export type DeliveryStatus = 'pending' | 'delivered' | 'failed';

/**
 * Outcome classes of one attempt, as written to the ledger. `endpoint_disabled` and
 * `app_missing` are attempts the dispatcher decided not to make.
 */
export type ErrorClass =
  | 'timeout'
  | 'connection'
  | 'dns'
  | 'tls'
  | 'redirect'
  | 'http'
  | 'ssrf_refused'
  | 'invalid_url'
  | 'endpoint_disabled'
  | 'app_missing';
