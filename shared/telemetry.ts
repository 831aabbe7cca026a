import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { BatchSpanProcessor, TracerProvider, type SpanProcessor } from '@opentelemetry/sdk-trace';
import type { RequestHandler } from 'express';
import type { BaseConfig } from './config.js';
import type { Logger } from './logger.js';

/**
 * Tracing: one trace follows an event from HTTP ingress, through the outbox and Kafka (W3C
 * `traceparent` in message headers) to each webhook attempt. The exporter is configured by
 * the standard OTEL_* variables (OTLP over HTTP); with none set, spans are not exported and
 * the API stays a no-op. `processors` lets tests collect spans in memory.
 */
export function startTelemetry(
  config: Pick<BaseConfig, 'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_TRACES_EXPORTER'>,
  log: Logger,
  processors: SpanProcessor[] = [],
): { shutdown(): Promise<void> } {
  const exporting = config.OTEL_TRACES_EXPORTER !== 'none' && !!config.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!exporting && processors.length === 0) return { shutdown: async () => undefined };
  const provider = new TracerProvider({
    spanProcessors: [
      ...processors,
      // The exporter reads OTEL_EXPORTER_OTLP_* (endpoint, headers) itself.
      ...(exporting ? [new BatchSpanProcessor({ exporter: new OTLPTraceExporter() })] : []),
    ],
  });
  // Global registration: W3C trace context in headers, the active span follows async calls.
  trace.setGlobalTracerProvider(provider);
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  if (exporting) log.info({ endpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT }, 'exporting traces');
  return {
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** A server span per request, continuing an incoming `traceparent`; active while it is handled. */
export function traceRequests(): RequestHandler {
  const tracer = trace.getTracer('svc-http');
  return (req, res, next) => {
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan(`${req.method} ${req.path}`, { kind: SpanKind.SERVER }, parent);
    res.on('finish', () => {
      const path = (req.route as { path?: string } | undefined)?.path;
      const full = path ? `${req.baseUrl}${path}` : undefined;
      const route = full && full.length > 1 ? full.replace(/\/$/, '') : full;
      if (route) span.updateName(`${req.method} ${route}`);
      span.setAttribute('http.request.method', req.method);
      span.setAttribute('http.response.status_code', res.statusCode);
      if (route) span.setAttribute('http.route', route);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), next);
  };
}

/** Adds the active trace context (`traceparent`) to outgoing message headers. */
export function withTraceHeaders(headers: Record<string, string> = {}): Record<string, string> {
  const carrier = { ...headers };
  if (!carrier.traceparent) propagation.inject(context.active(), carrier);
  return carrier;
}
