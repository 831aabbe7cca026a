import { trace } from '@opentelemetry/api';
import { describe, expect, it } from 'vitest';
import { inAttemptSpan, parentContext } from './tracing.js';

const TP = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

describe('attempt spans', () => {
  it('continue the W3C trace carried with the event', async () => {
    expect(trace.getSpanContext(parentContext(TP))).toMatchObject({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      isRemote: true,
    });
    const traceId = await inAttemptSpan(
      TP,
      { 'svc.attempt': 1 },
      async (span) => span.spanContext().traceId,
    );
    expect(traceId).toBe('4bf92f3577b34da6a3ce929d0e0e4736');
  });

  it('start a new trace without a usable traceparent', () => {
    expect(trace.getSpanContext(parentContext(undefined))).toBeUndefined();
    expect(trace.getSpanContext(parentContext('garbage'))).toBeUndefined();
  });

  it('pass errors through after ending the span', async () => {
    await expect(inAttemptSpan(TP, {}, async () => Promise.reject(new Error('x')))).rejects.toThrow(
      'x',
    );
  });
});
