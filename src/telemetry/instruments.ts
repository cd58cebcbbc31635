import { metrics, trace, type Histogram, type Meter, type Tracer } from '@opentelemetry/api';
import { METRIC } from './conventions.js';

/**
 * Parley's tracer and meter, from whatever SDK the process registered. With none registered the
 * API hands out no-op ones, and every span Parley starts is non-recording: instrumented code checks
 * `isRecording()` once and skips its work.
 */
const SCOPE = 'parley';

export function parleyTracer(): Tracer {
  return trace.getTracer(SCOPE);
}

function parleyMeter(): Meter {
  return metrics.getMeter(SCOPE);
}

interface GenAiInstruments {
  tokenUsage: Histogram;
  operationDuration: Histogram;
}

let instruments: { meter: Meter; value: GenAiInstruments } | undefined;

/** The GenAI client metrics, made once per registered meter provider. */
export function genAiInstruments(): GenAiInstruments {
  const meter = parleyMeter();
  if (instruments?.meter !== meter) {
    instruments = {
      meter,
      value: {
        tokenUsage: meter.createHistogram(METRIC.tokenUsage, { unit: '{token}', description: 'Measures number of input and output tokens used' }),
        operationDuration: meter.createHistogram(METRIC.operationDuration, { unit: 's', description: 'GenAI operation duration' }),
      },
    };
  }
  return instruments.value;
}

/** `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`: only then do spans carry message text. */
export function captureMessageContent(): boolean {
  return process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT?.toLowerCase() === 'true';
}
