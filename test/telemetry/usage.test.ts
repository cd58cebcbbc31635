/**
 * Token counts in traces and metrics are the server's: a server that reports no usage leaves the
 * `gen_ai.usage.*` attributes and the token histogram out, never a 0 it did not say. Spans and
 * metrics are read in memory from the real SDK; the back ends talk to the fake servers through
 * their real clients.
 */
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { MeterProvider, MetricReader, type DataPoint, type Histogram } from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createAnthropicApiBackend,
  createOpenAiCompatibleBackend,
  type AgentBackend,
} from '../../src/backends/index.js';
import type { StreamEvent } from '../../src/conversation/index.js';
import { createSessionManager, runTurn, type SessionManager } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { errorReply, startFakeAnthropicServer, type FakeAnthropicServer } from '../fixtures/fake-anthropic-server.js';
import { startFakeOpenAiServer, type FakeOpenAiServer } from '../fixtures/fake-openai-server.js';

/** A reader the test collects from when it wants, instead of on a timer. */
class CollectingReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

const spans = new InMemorySpanExporter();
const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] });
const reader = new CollectingReader();
const meterProvider = new MeterProvider({ readers: [reader] });
let openai: FakeOpenAiServer;
let anthropic: FakeAnthropicServer;
const managers: SessionManager[] = [];

beforeAll(async () => {
  trace.setGlobalTracerProvider(tracerProvider);
  metrics.setGlobalMeterProvider(meterProvider);
  [openai, anthropic] = await Promise.all([startFakeOpenAiServer(), startFakeAnthropicServer()]);
});
afterAll(async () => {
  await Promise.all([openai.close(), anthropic.close(), tracerProvider.shutdown(), meterProvider.shutdown()]);
  trace.disable();
  context.disable();
  propagation.disable();
  metrics.disable();
});
afterEach(async () => {
  await Promise.all(managers.splice(0).map((manager) => manager.close()));
  spans.reset();
  // Collecting clears the delta of what was recorded so far; cumulative points stay, so tests read differences.
  await reader.collect();
});

/** One turn of a new session through `runTurn`; returns the events the back end reported. */
async function turnOn(backend: AgentBackend, model: string): Promise<StreamEvent[]> {
  const manager = await createSessionManager({ store: createMemoryStore() });
  managers.push(manager);
  const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
  const turn = await runTurn(manager, sessionId, { backend, prompt: 'Hello', model });
  const events: StreamEvent[] = [];
  for await (const event of turn.events) events.push(event);
  return events;
}

function spanNamed(name: string) {
  const found = spans.getFinishedSpans().filter((span) => span.name === name);
  expect(found, `spans named "${name}"`).toHaveLength(1);
  return found[0]!;
}

function usageAttributes(attributes: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(attributes).filter(([key]) => key.startsWith('gen_ai.usage.')));
}

/** The token histogram's points summed by operation and token type (over models), as `{ count, sum }`. */
async function tokenPoints(): Promise<Record<string, { count: number; sum: number }>> {
  const { resourceMetrics } = await reader.collect();
  const points: Record<string, { count: number; sum: number }> = {};
  for (const scope of resourceMetrics.scopeMetrics) {
    for (const metric of scope.metrics) {
      if (metric.descriptor.name !== 'gen_ai.client.token.usage') continue;
      for (const point of metric.dataPoints as Array<DataPoint<Histogram>>) {
        const key = `${String(point.attributes['gen_ai.operation.name'])} ${String(point.attributes['gen_ai.token.type'])}`;
        const total = (points[key] ??= { count: 0, sum: 0 });
        total.count += point.value.count;
        total.sum += point.value.sum ?? 0;
      }
    }
  }
  return points;
}

const openAiBackend = () =>
  createOpenAiCompatibleBackend({ baseURL: openai.url, apiKey: 'dummy', model: 'fake-model', maxRetries: 0 });

describe('token usage in traces and metrics', () => {
  it('a server that reports no usage leaves the usage attributes and the token histogram out', async () => {
    const before = await tokenPoints();
    openai.enqueue({ text: 'An answer with no usage.', usage: null });
    const events = await turnOn(openAiBackend(), 'fake-model');

    // The back end invents no usage either.
    const metadata = events.flatMap((event) => (event.type === 'metadata_update' ? [event.metadata] : []));
    expect(metadata.some((entry) => entry.usage !== undefined)).toBe(false);
    expect(metadata.at(-1)).toMatchObject({ turnComplete: true, costUnknown: true });

    const agent = spanNamed('invoke_agent dev');
    expect(usageAttributes(agent.attributes)).toEqual({});
    // A cost nobody reported is not $0 either.
    expect(agent.attributes['parley.cost_usd']).toBeUndefined();
    expect(agent.attributes['gen_ai.response.finish_reasons']).toEqual(['end_turn']);
    expect(usageAttributes(spanNamed('chat fake-model').attributes)).toEqual({});
    expect(await tokenPoints()).toEqual(before);
  });

  it('a request the server refused records no tokens on its chat span', async () => {
    const before = await tokenPoints();
    anthropic.enqueue(errorReply(429, 'rate_limit_error', 'Slow down'));
    await turnOn(
      createAnthropicApiBackend({ apiKey: 'test-key', baseURL: anthropic.url, maxRetries: 0 }),
      'claude-haiku-4-5',
    );
    const chat = spanNamed('chat claude-haiku-4-5');
    expect(chat.attributes['error.type']).toEqual(expect.any(String));
    expect(usageAttributes(chat.attributes)).toEqual({});
    expect(usageAttributes(spanNamed('invoke_agent dev').attributes)).toEqual({});
    expect(await tokenPoints()).toEqual(before);
  });

  it('reported usage is recorded on the spans and as histogram points', async () => {
    const before = await tokenPoints();
    openai.enqueue({ text: 'Counted.', usage: { prompt_tokens: 40, completion_tokens: 8, cached_tokens: 10 } });
    await turnOn(openAiBackend(), 'fake-model');
    expect(usageAttributes(spanNamed('invoke_agent dev').attributes)).toEqual({
      'gen_ai.usage.input_tokens': 30,
      'gen_ai.usage.output_tokens': 8,
      'gen_ai.usage.cache_read.input_tokens': 10,
    });
    expect(usageAttributes(spanNamed('chat fake-model').attributes)).toEqual({
      'gen_ai.usage.input_tokens': 30,
      'gen_ai.usage.output_tokens': 8,
    });
    const after = await tokenPoints();
    const added = (key: string) => ({
      count: after[key]!.count - (before[key]?.count ?? 0),
      sum: after[key]!.sum - (before[key]?.sum ?? 0),
    });
    expect(added('invoke_agent input')).toEqual({ count: 1, sum: 30 });
    expect(added('invoke_agent output')).toEqual({ count: 1, sum: 8 });
    expect(added('chat input')).toEqual({ count: 1, sum: 30 });
    expect(added('chat output')).toEqual({ count: 1, sum: 8 });
  });
});
