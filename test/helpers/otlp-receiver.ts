import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * An OTLP/HTTP receiver on 127.0.0.1, as a collector's port 4318 is: it takes the JSON bodies the
 * real OTLP exporters POST to `/v1/traces` and `/v1/metrics` and keeps them, flattened, for tests.
 */
export interface ReceivedSpan {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  /** Attribute values, unwrapped from OTLP's AnyValue. */
  attributes: Record<string, unknown>;
  status: number | undefined;
  serviceName: string | undefined;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:<port>`: an `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  endpoint: string;
  spans: ReceivedSpan[];
  /** Names of the metrics received. */
  metricNames: Set<string>;
  /** Resolves when a span satisfying `predicate` has arrived. */
  waitForSpan(predicate: (span: ReceivedSpan) => boolean): Promise<ReceivedSpan>;
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const metricNames = new Set<string>();
  const waiters: Array<{ predicate: (span: ReceivedSpan) => boolean; resolve: (span: ReceivedSpan) => void }> = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as OtlpBody;
      if (request.url === '/v1/traces') {
        for (const received of flattenSpans(body)) {
          spans.push(received);
          for (const waiter of waiters.splice(0)) {
            if (waiter.predicate(received)) waiter.resolve(received);
            else waiters.push(waiter);
          }
        }
      } else if (request.url === '/v1/metrics') {
        for (const resource of body.resourceMetrics ?? [])
          for (const scope of resource.scopeMetrics ?? [])
            for (const metric of scope.metrics ?? []) metricNames.add(metric.name);
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    spans,
    metricNames,
    waitForSpan(predicate) {
      const found = spans.find(predicate);
      if (found) return Promise.resolve(found);
      return new Promise((resolve) => waiters.push({ predicate, resolve }));
    },
    close: () => new Promise<void>((closed) => server.close(() => closed())),
  };
}

interface AnyValue {
  stringValue?: string;
  intValue?: number | string;
  doubleValue?: number;
  boolValue?: boolean;
  arrayValue?: { values?: AnyValue[] };
}
interface OtlpBody {
  resourceSpans?: Array<{
    resource?: { attributes?: Array<{ key: string; value: AnyValue }> };
    scopeSpans?: Array<{
      spans?: Array<{
        name: string;
        traceId: string;
        spanId: string;
        parentSpanId?: string;
        attributes?: Array<{ key: string; value: AnyValue }>;
        status?: { code?: number };
      }>;
    }>;
  }>;
  resourceMetrics?: Array<{ scopeMetrics?: Array<{ metrics?: Array<{ name: string }> }> }>;
}

function unwrap(value: AnyValue): unknown {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.arrayValue) return (value.arrayValue.values ?? []).map(unwrap);
  return undefined;
}

function flattenSpans(body: OtlpBody): ReceivedSpan[] {
  const found: ReceivedSpan[] = [];
  for (const resource of body.resourceSpans ?? []) {
    const serviceName = resource.resource?.attributes?.find((attribute) => attribute.key === 'service.name');
    for (const scope of resource.scopeSpans ?? []) {
      for (const span of scope.spans ?? []) {
        found.push({
          name: span.name,
          traceId: span.traceId,
          spanId: span.spanId,
          parentSpanId: span.parentSpanId || undefined,
          attributes: Object.fromEntries(
            (span.attributes ?? []).map((attribute) => [attribute.key, unwrap(attribute.value)]),
          ),
          status: span.status?.code,
          serviceName: serviceName ? (unwrap(serviceName.value) as string) : undefined,
        });
      }
    }
  }
  return found;
}
