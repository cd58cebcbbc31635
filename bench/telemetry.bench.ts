/**
 * What tracing costs a turn, on the scripted back end over a memory store:
 * - tracing on against tracing off (no SDK registered), in alternating blocks of turns so drifts in
 *   load hit both. Target ≤ 1.03×. "On" is what `parley` does when a user sets
 *   OTEL_EXPORTER_OTLP_ENDPOINT: the bench calls the CLI's own `startTelemetry` (src/cli/telemetry.ts),
 *   so it measures the product's path: the Node SDK registered without a context manager, a batch
 *   span processor and the real OTLP/HTTP exporter sending to a collector process on 127.0.0.1, and
 *   the GenAI metrics recorded into the SDK's meter provider (exported at shutdown, outside the
 *   timings). Until this session the bench registered the provider itself with the SDK's default
 *   AsyncLocalStorage context manager, which the CLI no longer installs.
 * - tracing off against code without instrumentation: with no SDK the only instrumented work a turn
 *   does is asking for a span and getting none (`startAgentTrace` → undefined); that call is timed on
 *   its own and added to the uninstrumented turn. Target ≤ 1.01×.
 * `PARLEY_BENCH_TURNS` sets turns per side (default 400).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { startTelemetry, type Telemetry } from '../src/cli/telemetry.js';
import { createOpenAiCompatibleBackend, createScriptedBackend, step } from '../src/backends/index.js';
import { createSessionManager, runTurn, type SessionManager } from '../src/sessions/index.js';
import { createMemoryStore } from '../src/store/index.js';
import { startAgentTrace } from '../src/telemetry/index.js';
import { startFakeOpenAiServer } from '../test/fixtures/fake-openai-server.js';
import { formatMs, percentile, ratio, table } from './stats.js';

const TOOL = {
  name: 'lookup',
  description: 'Looks a key up.',
  inputSchema: { type: 'object' },
  execute: () => Promise.resolve({ content: 'value' }),
};

type Backend = ReturnType<typeof createScriptedBackend> | ReturnType<typeof createOpenAiCompatibleBackend>;

async function oneTurn(manager: SessionManager, sessionId: string, backendFor: () => Backend): Promise<number> {
  const backend = backendFor();
  const started = performance.now();
  const turn = await runTurn(manager, sessionId, { backend, prompt: 'Find a.', tools: [TOOL] });
  for await (const _event of turn.events);
  return performance.now() - started;
}

function scripted(): Backend {
  return createScriptedBackend({
    turns: [
      [
        step.text('Looking it up now, then answering.'),
        step.tool('lookup', { key: 'a' }),
        step.text('The value is "value". '.repeat(8)),
        step.usage({ inputTokens: 50, outputTokens: 20 }),
      ],
    ],
  });
}

/**
 * A stand-in collector in its own process, as a real one is: it reads each OTLP request and answers
 * 200, so its parsing does not count against the traced process.
 */
async function startCollector(): Promise<{ endpoint: string; spans(): number; close(): Promise<void> }> {
  const source = `
    let requests = 0;
    const server = require('node:http').createServer((request, response) => {
      request.resume();
      request.on('end', () => { if (request.url === '/v1/traces') requests++; response.writeHead(200, { 'content-type': 'application/json' }).end('{}'); });
    });
    server.listen(0, '127.0.0.1', () => process.stdout.write(server.address().port + '\\n'));
    process.stdin.on('data', () => process.stdout.write(requests + '\\n'));
    process.stdin.on('end', () => process.exit(0));`;
  const child = spawn(process.execPath, ['-e', source], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = child.stdout.setEncoding('utf8');
  const [port] = (await once(lines, 'data')) as [string];
  let last = 0;
  lines.on('data', (line: string) => (last = Number(line)));
  return {
    endpoint: `http://127.0.0.1:${port.trim()}`,
    spans: () => last,
    async close() {
      child.stdin.write('count\n');
      await once(lines, 'data');
      child.stdin.end();
      await once(child, 'exit');
    },
  };
}

interface Sides {
  on: number[];
  off: number[];
}

/** Registers the SDK as `parley` does with OTEL_EXPORTER_OTLP_ENDPOINT set (the exporters read it from process.env). */
async function tracingOn(endpoint: string): Promise<Telemetry> {
  process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = endpoint;
  const telemetry = await startTelemetry(process.env);
  if (!telemetry) throw new Error('startTelemetry registered nothing with OTEL_EXPORTER_OTLP_ENDPOINT set.');
  return telemetry;
}

/** Exports what is buffered, then unregisters every global the SDK set: no SDK, as before. */
async function tracingOff(telemetry: Telemetry): Promise<void> {
  await telemetry.shutdown();
  trace.disable();
  context.disable();
  propagation.disable();
  metrics.disable();
}

/** Alternating blocks of turns with tracing off (no SDK) and on (the SDK registered, exporting). */
async function measure(
  turns: number,
  block: number,
  endpoint: string,
  manager: SessionManager,
  backendFor: () => Backend,
  beforeTurn: () => void = () => {},
): Promise<Sides> {
  const sides: Sides = { on: [], off: [] };
  for (let round = 0; round < Math.ceil(turns / block) + 1; round++) {
    const warm = round === 0;
    for (const traced of [false, true]) {
      const telemetry = traced ? await tracingOn(endpoint) : undefined;
      // A fresh session per block: the sessions stay short, as a chat's turns do.
      const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
      for (let index = 0; index < block; index++) {
        beforeTurn();
        const ms = await oneTurn(manager, sessionId, backendFor);
        if (!warm) (traced ? sides.on : sides.off).push(ms);
      }
      if (telemetry) await tracingOff(telemetry);
    }
  }
  return sides;
}

function rows(label: string, sides: Sides): string[][] {
  const off = percentile(sides.off, 50);
  const on = percentile(sides.on, 50);
  return [
    [
      `${label}: tracing on (parley's startTelemetry: SDK, batch processor, OTLP/HTTP to a collector process, metrics)`,
      formatMs(on),
      formatMs(percentile(sides.on, 95)),
      `${ratio(on, off)} vs off (target ≤ 1.03×)`,
    ],
    [`${label}: tracing off (no SDK registered)`, formatMs(off), formatMs(percentile(sides.off, 95)), '1.00×'],
  ];
}

export async function run(): Promise<string> {
  const turns = Number(process.env['PARLEY_BENCH_TURNS'] ?? 400);
  const block = 25;
  const receiver = await startCollector();
  const openAi = await startFakeOpenAiServer();
  const manager = await createSessionManager({ store: createMemoryStore() });
  let scriptedSides: Sides;
  let httpSides: Sides;
  try {
    scriptedSides = await measure(turns, block, receiver.endpoint, manager, scripted);
    const openAiBackend = createOpenAiCompatibleBackend({
      baseURL: openAi.url,
      apiKey: 'bench',
      model: 'fake-model',
      maxRetries: 0,
    });
    httpSides = await measure(
      Math.min(turns, 200),
      block,
      receiver.endpoint,
      manager,
      () => openAiBackend,
      () =>
        openAi.enqueue(
          {
            toolCalls: [{ name: 'lookup', arguments: { key: 'a' } }],
            usage: { prompt_tokens: 50, completion_tokens: 5 },
          },
          { text: 'The value is "value". '.repeat(8), usage: { prompt_tokens: 60, completion_tokens: 20 } },
        ),
    );
  } finally {
    delete process.env['OTEL_EXPORTER_OTLP_ENDPOINT'];
    await manager.close();
    await receiver.close();
    await openAi.close();
  }
  // The instrumentation's whole cost with no SDK: one request for a span that comes back undefined.
  const calls = 200_000;
  const started = performance.now();
  for (let index = 0; index < calls; index++)
    startAgentTrace({ agentName: 'dev', sessionId: 's', backend: 'scripted' });
  const hookMs = (performance.now() - started) / calls;
  const offMedian = percentile(scriptedSides.off, 50);
  return [
    `### Tracing: one turn with a tool call (${scriptedSides.on.length} scripted and ${httpSides.on.length} openai-compatible turns per side, in alternating blocks of ${block})`,
    '',
    table(
      ['', 'median', 'p95', 'ratio'],
      [
        ...rows('scripted', scriptedSides),
        ...rows('openai-compatible on the fake server (two model calls)', httpSides),
        [
          'the instrumentation with no SDK, per turn',
          formatMs(hookMs),
          '',
          `${ratio(offMedian, offMedian - hookMs)} of a scripted turn vs uninstrumented (target ≤ 1.01×)`,
        ],
      ],
    ),
    '',
    `${receiver.spans()} span export requests reached the collector.`,
  ].join('\n');
}
