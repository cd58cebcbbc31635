import {
  context as otelContext,
  propagation,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { parleyTracer } from './instruments.js';

/**
 * Runs `fn` inside a span of its own (a compaction, a workflow phase, a `waitForUser` wait) and
 * ends it with `fn`: failed when `fn` throws. With no tracing SDK the span is a no-op.
 *
 * The span's parent is `parent` when given, else the active context. `fn` gets the span's context
 * to hand on as the parent of what it starts (Parley passes parents explicitly, so the tree is
 * right without a context manager); it also runs with that context active, for code that reads
 * the active context under a context manager a library user registered.
 */
export async function inSpan<T>(
  name: string,
  attributes: Attributes,
  fn: (span: Span, context: Context) => Promise<T>,
  parent?: Context,
): Promise<T> {
  const parentContext = parent ?? otelContext.active();
  const span = parleyTracer().startSpan(name, { attributes }, parentContext);
  const context = trace.setSpan(parentContext, span);
  return otelContext.with(context, async () => {
    try {
      return await fn(span, context);
    } catch (error) {
      span.recordException(error instanceof Error ? error : String(error));
      span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
      if (error instanceof Error)
        span.setAttribute('error.type', (error as { code?: unknown }).code?.toString() ?? error.name);
      throw error;
    } finally {
      span.end();
    }
  });
}

export interface TraceCarrier {
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

/**
 * The context of the trace a client passed with its request (W3C `traceparent`/`tracestate`), to
 * pass as the parent of the turn it asked for, so the turn's spans join the client's trace.
 * Undefined without a traceparent; with no propagator registered (no SDK), the active context.
 */
export function traceParentContext(carrier: TraceCarrier): Context | undefined {
  if (!carrier.traceparent) return undefined;
  const headers: Record<string, string> = { traceparent: carrier.traceparent };
  if (carrier.tracestate) headers.tracestate = carrier.tracestate;
  return propagation.extract(otelContext.active(), headers);
}

/**
 * Runs `fn` with the client's trace (see `traceParentContext`) active, for code that reads the
 * active context under a context manager. Without a traceparent `fn` runs as it would have.
 */
export function withTraceParent<T>(carrier: TraceCarrier, fn: () => T): T {
  const parent = traceParentContext(carrier);
  return parent ? otelContext.with(parent, fn) : fn();
}

/** Marks a span failed without an exception (an outcome reported as a value, like a compaction's). */
export function markSpanFailed(span: Span, errorType: string, message: string): void {
  span.setAttribute('error.type', errorType);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}
