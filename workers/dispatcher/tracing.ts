import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  propagation,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';

/**
 * One span per webhook attempt, continuing the trace that came with the event (the Kafka
 * `traceparent` header, kept on the dispatch so retries continue it too). Without an SDK
 * registered (the lead wires the OTEL_* exporter in the composition root) these are no-ops.
 */

const W3C = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The parent context of a traceparent: through the registered propagator, else parsed here. */
export function parentContext(traceparent: string | undefined): Context {
  if (!traceparent) return ROOT_CONTEXT;
  const extracted = propagation.extract(ROOT_CONTEXT, { traceparent });
  if (trace.getSpanContext(extracted)) return extracted;
  const m = W3C.exec(traceparent.trim());
  if (!m) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId: m[1]!,
    spanId: m[2]!,
    traceFlags: parseInt(m[3]!, 16),
    isRemote: true,
  });
}

export async function inAttemptSpan<T>(
  traceparent: string | undefined,
  attributes: Attributes,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = trace
    .getTracer('svc-dispatcher')
    .startSpan(
      'webhook attempt',
      { kind: SpanKind.CLIENT, attributes },
      parentContext(traceparent),
    );
  try {
    return await fn(span);
  } catch (err) {
    span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error)?.message });
    throw err;
  } finally {
    span.end();
  }
}
