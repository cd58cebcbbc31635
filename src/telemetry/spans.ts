import { context as otelContext, propagation, SpanStatusCode, type Attributes, type Span } from '@opentelemetry/api';
import { parleyTracer } from './instruments.js';

/**
 * Runs `fn` inside a span of its own (a compaction, a workflow phase, a `waitForUser` wait) and
 * ends it with `fn`: failed when `fn` throws. With no tracing SDK the span is a no-op.
 */
export async function inSpan<T>(name: string, attributes: Attributes, fn: (span: Span) => Promise<T>): Promise<T> {
  return parleyTracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      if (error instanceof Error) span.setAttribute('error.type', (error as { code?: unknown }).code?.toString() ?? error.name);
      throw error;
    } finally {
      span.end();
    }
  });
}

/**
 * Runs `fn` in the trace a client passed with its request (W3C `traceparent`/`tracestate`), so the
 * turn's spans join the client's trace. Without a traceparent, or with no SDK registered, `fn` runs
 * as it would have.
 */
export function withTraceParent<T>(carrier: { traceparent?: string | undefined; tracestate?: string | undefined }, fn: () => T): T {
  if (!carrier.traceparent) return fn();
  const headers: Record<string, string> = { traceparent: carrier.traceparent };
  if (carrier.tracestate) headers.tracestate = carrier.tracestate;
  return otelContext.with(propagation.extract(otelContext.active(), headers), fn);
}

/** Marks a span failed without an exception (an outcome reported as a value, like a compaction's). */
export function markSpanFailed(span: Span, errorType: string, message: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}
