import {
  metrics,
  trace,
  type Histogram,
  type MeterProvider,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';
import { METRIC } from './conventions.js';

/**
 * Parley's tracer and meter, from whatever SDK the process registered. With none registered the
 * API hands out no-op ones, and every span Parley starts is non-recording: instrumented code checks
 * `isRecording()` once and skips its work.
 *
 * Each is looked up once per registered provider, not once per turn: a turn runs its tracing code
 * cold, between much other work, where a `process.env` read and the API's tracer and meter look-ups
 * each cost microseconds, against the per-turn target of bench/telemetry.bench.ts (≤ 1.03×).
 */
const SCOPE = 'parley';

interface Tracing {
  /** The API's global provider: a new one after `trace.disable()` and a new registration. */
  provider: TracerProvider;
  tracer: Tracer;
  capture: boolean;
}

let tracing: Tracing | undefined;

function currentTracing(): Tracing {
  const provider = trace.getTracerProvider();
  if (tracing?.provider !== provider) {
    tracing = { provider, tracer: provider.getTracer(SCOPE), capture: readCaptureMessageContent() };
  }
  return tracing;
}

export function parleyTracer(): Tracer {
  return currentTracing().tracer;
}

interface GenAiInstruments {
  tokenUsage: Histogram;
  operationDuration: Histogram;
}

let instruments: { provider: MeterProvider; value: GenAiInstruments } | undefined;

/** The GenAI client metrics, made once per registered meter provider. */
export function genAiInstruments(): GenAiInstruments {
  const provider = metrics.getMeterProvider();
  if (instruments?.provider !== provider) {
    const meter = provider.getMeter(SCOPE);
    instruments = {
      provider,
      value: {
        tokenUsage: meter.createHistogram(METRIC.tokenUsage, {
          unit: '{token}',
          description: 'Measures number of input and output tokens used',
        }),
        operationDuration: meter.createHistogram(METRIC.operationDuration, {
          unit: 's',
          description: 'GenAI operation duration',
        }),
      },
    };
  }
  return instruments.value;
}

/**
 * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: only then do spans carry message text.
 * Read when a tracer provider is registered (as the SDK reads its own `OTEL_*` variables), not on
 * every turn.
 */
export function captureMessageContent(): boolean {
  return currentTracing().capture;
}

function readCaptureMessageContent(): boolean {
  return process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.toLowerCase() === 'true';
}
