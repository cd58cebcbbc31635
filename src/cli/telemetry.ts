/**
 * Registers OpenTelemetry's Node SDK for the `parley` process when the standard variables ask for
 * it, so a user sets one variable (`OTEL_EXPORTER_OTLP_ENDPOINT`) and sees Parley's turns in their
 * tracing tool. Parley's core depends on `@opentelemetry/api` alone; the SDK packages load here, on
 * demand, and only in the CLI: a library user registers their own SDK.
 *
 * Traces are exported when `OTEL_TRACES_EXPORTER` names `otlp` or `console`, or, with it unset, when
 * an OTLP endpoint is set; metrics likewise with `OTEL_METRICS_EXPORTER`. `OTEL_SDK_DISABLED=true`
 * turns both off. The exporters read the rest of the standard variables themselves (endpoint,
 * headers, timeouts, `OTEL_BSP_*`), and the resource takes `OTEL_SERVICE_NAME` and
 * `OTEL_RESOURCE_ATTRIBUTES`. OTLP goes over HTTP with JSON bodies (port 4318 of a collector).
 */
export interface Telemetry {
  /** Exports what is buffered and stops; call before the process ends. */
  shutdown(): Promise<void>;
}

type Exporter = 'otlp' | 'console';

function exporterFor(signal: 'TRACES' | 'METRICS', env: NodeJS.ProcessEnv): Exporter | undefined {
  const named = env[`OTEL_${signal}_EXPORTER`]
    ?.split(',')
    .map((entry) => entry.trim().toLowerCase())
    .filter(Boolean);
  if (named && named.length > 0)
    return named.includes('otlp') ? 'otlp' : named.includes('console') ? 'console' : undefined;
  return env.OTEL_EXPORTER_OTLP_ENDPOINT || env[`OTEL_EXPORTER_OTLP_${signal}_ENDPOINT`] ? 'otlp' : undefined;
}

/** Starts the SDK when asked to (see above); undefined when tracing and metrics are both off. */
export async function startTelemetry(
  env: NodeJS.ProcessEnv = process.env,
  version = '0.1.0',
): Promise<Telemetry | undefined> {
  if (env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return undefined;
  const traces = exporterFor('TRACES', env);
  const metricExporter = exporterFor('METRICS', env);
  if (!traces && !metricExporter) return undefined;
  const protocol = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL;
  if (protocol && protocol !== 'http/json') {
    process.stderr.write(
      `parley: OTEL_EXPORTER_OTLP_PROTOCOL is "${protocol}", but Parley exports OTLP over HTTP with JSON bodies (http/json); point it at the collector's HTTP port (4318).\n`,
    );
  }
  const { defaultResource, detectResources, envDetector, resourceFromAttributes } =
    await import('@opentelemetry/resources');
  // The environment (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) wins over Parley's defaults.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'parley', 'service.version': version }))
    .merge(detectResources({ detectors: [envDetector] }));
  const stops: Array<() => Promise<void>> = [];

  if (traces) {
    const { BatchSpanProcessor, ConsoleSpanExporter, NodeTracerProvider } =
      await import('@opentelemetry/sdk-trace-node');
    const exporter =
      traces === 'otlp'
        ? new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter()
        : new ConsoleSpanExporter();
    const provider = new NodeTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
    // The W3C trace-context propagator, and no context manager: Parley passes every span's parent
    // explicitly, and Node 20's AsyncLocalStorage (the SDK's default) would make every promise in
    // the process pay async hooks, about a third of a scripted turn (bench/telemetry.bench.ts).
    provider.register({ contextManager: null });
    stops.push(() => provider.shutdown());
  }
  if (metricExporter) {
    const { ConsoleMetricExporter, MeterProvider, PeriodicExportingMetricReader } =
      await import('@opentelemetry/sdk-metrics');
    const exporter =
      metricExporter === 'otlp'
        ? new (await import('@opentelemetry/exporter-metrics-otlp-http')).OTLPMetricExporter()
        : new ConsoleMetricExporter();
    const provider = new MeterProvider({
      resource,
      readers: [new PeriodicExportingMetricReader({ exporter, ...exportInterval(env) })],
    });
    (await import('@opentelemetry/api')).metrics.setGlobalMeterProvider(provider);
    stops.push(() => provider.shutdown());
  }
  let stopped: Promise<void> | undefined;
  return {
    shutdown() {
      stopped ??= Promise.allSettled(stops.map((stop) => stop())).then(() => undefined);
      return stopped;
    },
  };
}

function exportInterval(env: NodeJS.ProcessEnv): { exportIntervalMillis?: number } {
  const value = Number(env.OTEL_METRIC_EXPORT_INTERVAL);
  return Number.isFinite(value) && value > 0 ? { exportIntervalMillis: value } : {};
}
