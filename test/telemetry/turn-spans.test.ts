import { context, metrics, propagation, trace } from '@opentelemetry/api';
import { OTLPMetricExporter } from '@opentelemetry/exporter-metrics-otlp-http';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createOpenAiCompatibleBackend, createScriptedBackend, step } from '../../src/backends/index.js';
import { createSessionManager, runTurn } from '../../src/sessions/index.js';
import { createMemoryStore } from '../../src/store/index.js';
import { startFakeOpenAiServer } from '../fixtures/fake-openai-server.js';
import { defineAgent, defineHarness } from '../../src/harness/index.js';
import { closeAll, followConversation, harness, writeRole } from '../draft/helpers.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../helpers/otlp-receiver.js';
import { foldingSummarizer, prose } from '../sessions/compaction-helpers.js';

// The real SDK and the real OTLP/HTTP exporters, sending to a receiver on 127.0.0.1: the spans
// checked here are the ones a tracing tool would get. Every test runs twice: with the provider
// registered as `parley` registers it (no context manager: parents are passed explicitly), and as a
// library user may register it (the SDK's default AsyncLocalStorage context manager).
const registrations = [
  { name: 'registered without a context manager (as the CLI does)', contextManager: null },
  { name: "registered with the SDK's default AsyncLocalStorage context manager", contextManager: undefined },
] as const;

describe.each(registrations)('provider $name', ({ contextManager }) => {
  let receiver: OtlpReceiver;
  let tracerProvider: NodeTracerProvider;
  let meterProvider: MeterProvider;

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    tracerProvider = new NodeTracerProvider({
      spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${receiver.endpoint}/v1/traces` }))],
    });
    tracerProvider.register({ contextManager });
    meterProvider = new MeterProvider({
      readers: [
        new PeriodicExportingMetricReader({
          exporter: new OTLPMetricExporter({ url: `${receiver.endpoint}/v1/metrics` }),
          exportIntervalMillis: 60_000,
        }),
      ],
    });
    metrics.setGlobalMeterProvider(meterProvider);
  });

  afterAll(async () => {
    await tracerProvider.shutdown();
    await meterProvider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
    metrics.disable();
    await receiver.close();
  });

  /** Registers the same tracer provider anew, as a process that starts again would. */
  function reregisterTracerProvider(): void {
    trace.disable();
    trace.setGlobalTracerProvider(tracerProvider);
  }

  afterEach(async () => {
    await closeAll();
    if (process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT !== undefined) {
      delete process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT;
      reregisterTracerProvider();
    }
    receiver.spans.length = 0;
  });

  /** An analyst that drafts a dev worker, awaits it and answers; the dev answers on its own back end. */
  async function turnWithWorker(): Promise<{ sessionId: string }> {
    const analyst = createScriptedBackend({ idPrefix: 'analyst' });
    const dev = createScriptedBackend({ idPrefix: 'dev' });
    const h = await harness({ backends: { default: analyst, 'dev-backend': dev } });
    await writeRole(
      h.dataDir,
      'dev.md',
      '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
    );
    // Filled in when the worker is dispatched, before the script reaches `await_agent` (read by reference).
    const awaitInput = { agentId: '' };
    h.service.on('agent_status', ({ agent }) => {
      if (agent.kind === 'worker') awaitInput.agentId = agent.agentId;
    });
    analyst.enqueue([
      step.text('Asking a developer.'),
      step.tool('draft_agent', { role: 'dev', prompt: 'Implement the login page.' }),
      step.tool('await_agent', awaitInput),
      step.text('Done: the login page is in.'),
      step.usage({ inputTokens: 120, outputTokens: 30 }),
      step.cost(0.5),
    ]);
    dev.enqueue([step.text('Login page added.'), step.usage({ inputTokens: 40, outputTokens: 8 })]);
    const [project] = await h.service.listProjects();
    const task = await h.service.createTask({ project: project!.name, title: 'Login page' });
    const drafted = await h.service.draft({
      channelId: 'c',
      role: 'product-analyst',
      project: project!.name,
      task: task.slug,
    });
    await h.service.submitPrompt({ channelId: 'c', content: 'Build the login page.' });
    await h.service.settled({ channelId: 'c' });
    await tracerProvider.forceFlush();
    return { sessionId: drafted.sessionId };
  }

  function byName(name: string): ReceivedSpan {
    const found = receiver.spans.filter((span) => span.name === name);
    expect(found, `spans named "${name}" among ${receiver.spans.map((span) => span.name).join(', ')}`).toHaveLength(1);
    return found[0]!;
  }

  describe('traces of a turn', () => {
    it('a chat turn with a tool call and a worker yields invoke_agent > execute_tool > invoke_agent, with the GenAI attributes', async () => {
      const { sessionId } = await turnWithWorker();
      const turn = byName('invoke_agent product-analyst');
      const dispatch = byName('execute_tool draft_agent');
      const worker = byName('invoke_agent dev');
      expect(turn.parentSpanId).toBeUndefined();
      expect(dispatch.parentSpanId).toBe(turn.spanId);
      expect(worker.parentSpanId).toBe(dispatch.spanId);
      expect(new Set([dispatch.traceId, worker.traceId])).toEqual(new Set([turn.traceId]));
      expect(turn.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'product-analyst',
        'gen_ai.conversation.id': sessionId,
        'gen_ai.provider.name': 'parley.scripted',
        'gen_ai.response.model': 'scripted-1',
        'gen_ai.usage.input_tokens': 120,
        'gen_ai.usage.output_tokens': 30,
        'gen_ai.response.finish_reasons': ['end_turn'],
        'parley.cost_usd': 0.5,
      });
      expect(dispatch.attributes).toMatchObject({
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'draft_agent',
      });
      expect(dispatch.attributes['gen_ai.tool.call.id']).toEqual(expect.any(String));
      expect(worker.attributes).toMatchObject({
        'gen_ai.agent.name': 'dev',
        'gen_ai.usage.input_tokens': 40,
        'gen_ai.usage.output_tokens': 8,
      });
      expect(byName('execute_tool await_agent').parentSpanId).toBe(turn.spanId);
    });

    it("the other agent's turn in a conversation is a child of the execute_tool say span that asked for it", async () => {
      const analyst = createScriptedBackend({ idPrefix: 'analyst' });
      const dev = createScriptedBackend({ idPrefix: 'dev', defaultTurn: () => [step.text('Use a queue.')] });
      const h = await harness({ backends: { default: analyst, 'dev-backend': dev } });
      await writeRole(
        h.dataDir,
        'dev.md',
        '---\ndescription: Developer\nbackend: dev-backend\n---\nYou implement tasks.\n',
      );
      const ref = followConversation(h.manager, 'dev');
      analyst.enqueue([
        step.tool('open_conversation', { role: 'dev', topic: 'Payment retries' }),
        step.tool('say', {
          get conversationId() {
            return ref.conversationId;
          },
          message: 'Should retries be synchronous?',
        }),
        step.text('A queue, then.'),
      ]);
      const [project] = await h.service.listProjects();
      const task = await h.service.createTask({ project: project!.name, title: 'Checkout' });
      await h.service.draft({ channelId: 'c', role: 'product-analyst', project: project!.name, task: task.slug });
      await h.service.submitPrompt({ channelId: 'c', content: 'Plan retries with a developer.' });
      await h.service.settled({ channelId: 'c' });
      await tracerProvider.forceFlush();
      const say = byName('execute_tool say');
      expect(say.parentSpanId).toBe(byName('invoke_agent product-analyst').spanId);
      expect(byName('invoke_agent dev').parentSpanId).toBe(say.spanId);
    });

    it('records message content only when OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true', async () => {
      await turnWithWorker();
      const contentKeys = [
        'gen_ai.input.messages',
        'gen_ai.output.messages',
        'gen_ai.tool.call.arguments',
        'gen_ai.tool.call.result',
      ];
      for (const span of receiver.spans)
        for (const key of contentKeys) expect(span.attributes, span.name).not.toHaveProperty(key);

      receiver.spans.length = 0;
      process.env.OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = 'true';
      // The variable is read when a tracer provider is registered, as the SDK reads its own.
      reregisterTracerProvider();
      await turnWithWorker();
      const turn = byName('invoke_agent product-analyst');
      expect(JSON.parse(turn.attributes['gen_ai.input.messages'] as string)).toEqual([
        { role: 'user', parts: [{ type: 'text', content: 'Build the login page.' }] },
      ]);
      expect(turn.attributes['gen_ai.output.messages']).toContain('Done: the login page is in.');
      expect(
        JSON.parse(byName('execute_tool draft_agent').attributes['gen_ai.tool.call.arguments'] as string),
      ).toMatchObject({ role: 'dev' });
    });

    it('records the GenAI client metrics', async () => {
      await turnWithWorker();
      await meterProvider.forceFlush();
      expect([...receiver.metricNames].sort()).toEqual([
        'gen_ai.client.operation.duration',
        'gen_ai.client.token.usage',
      ]);
    });
  });

  describe('traces of a harness run', () => {
    it('a run is an invoke_workflow span, with its phases, its waitForUser waits and its agent turns as children', async () => {
      const writer = defineAgent({
        name: 'writer',
        role: 'writer',
        backend: createScriptedBackend({
          turns: [[step.text('A draft.'), step.usage({ inputTokens: 5, outputTokens: 2 })]],
        }),
      });
      const workflow = defineHarness({
        name: 'review',
        agents: { writer },
        async run({ agents, phase, session }) {
          const text = await phase('write', () => agents.writer.run('Write it.'));
          const answer = await session!.waitForUser('Approve?', { choices: ['yes', 'no'] });
          return `${text} ${answer.choice}`;
        },
      });
      const running = workflow.create().startSession();
      running.on('user:prompt', (event) => running.reply(event.promptId, 'yes'));
      await running.complete();
      await tracerProvider.forceFlush();
      const run = byName('invoke_workflow review');
      expect(run.attributes).toMatchObject({
        'gen_ai.operation.name': 'invoke_workflow',
        'gen_ai.workflow.name': 'review',
      });
      const write = byName('phase write');
      expect(write.parentSpanId).toBe(run.spanId);
      expect(byName('invoke_agent writer').parentSpanId).toBe(write.spanId);
      expect(byName('wait_for_user').parentSpanId).toBe(run.spanId);
    });
  });

  describe('traces of a compaction', () => {
    it('a compaction that a turn starts is a span under the turn, with the tokens before and after and the checkpoint version', async () => {
      const manager = await createSessionManager({
        store: createMemoryStore(),
        tokenBudget: 3_000,
        summarize: foldingSummarizer().summarize,
        compactInBackground: false,
      });
      try {
        const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
        for (let index = 0; index < 40; index++) {
          await manager.addMessage(sessionId, {
            role: index % 2 ? 'assistant' : 'user',
            content: `Message ${index}: ${prose(60, index + 1)}`,
          });
        }
        const turn = await runTurn(manager, sessionId, {
          backend: createScriptedBackend({ turns: [[step.text('Noted.')]] }),
          prompt: 'Go on.',
        });
        for await (const _event of turn.events);
        await tracerProvider.forceFlush();
        const compaction = byName('compaction');
        expect(compaction.parentSpanId).toBe(byName('invoke_agent dev').spanId);
        expect(compaction.attributes).toMatchObject({
          'gen_ai.conversation.id': sessionId,
          'parley.compaction.trigger': 'auto',
          'parley.compaction.checkpoint_version': 1,
        });
        expect(compaction.attributes['parley.compaction.tokens_after']).toBeLessThan(
          compaction.attributes['parley.compaction.tokens_before'] as number,
        );
      } finally {
        await manager.close();
      }
    });
  });

  describe('traces of a turn that fails before it streams', () => {
    it('still ends its invoke_agent span, marked as an error', async () => {
      const manager = await createSessionManager({ store: createMemoryStore() });
      try {
        const backend = createScriptedBackend({ turns: [[step.text('never')]] });
        backend.execute = () => {
          throw new Error('the back end refused the request');
        };
        const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
        await expect(runTurn(manager, sessionId, { backend, prompt: 'Hello.' })).rejects.toThrow(
          'the back end refused the request',
        );
        await tracerProvider.forceFlush();
        const agent = byName('invoke_agent dev');
        expect(agent.status).toBe(2);
        expect(agent.attributes['error.type']).toBe('Error');
      } finally {
        await manager.close();
      }
    });
  });

  describe('traces of a managed back end', () => {
    it('each model call is a chat span under the turn, and the tool call between them an execute_tool span', async () => {
      const server = await startFakeOpenAiServer();
      const manager = await createSessionManager({ store: createMemoryStore() });
      try {
        server.enqueue(
          {
            toolCalls: [{ id: 'call-1', name: 'lookup', arguments: { key: 'a' } }],
            usage: { prompt_tokens: 10, completion_tokens: 3 },
            model: 'fake-model-2025',
          },
          { text: 'Found it.', usage: { prompt_tokens: 20, completion_tokens: 4 }, model: 'fake-model-2025' },
        );
        const backend = createOpenAiCompatibleBackend({
          baseURL: server.url,
          apiKey: 'dummy',
          model: 'fake-model',
          maxRetries: 0,
        });
        const { sessionId } = await manager.createSession({ scope: { kind: 'draft', role: 'dev' }, agentType: 'dev' });
        const lookup = {
          name: 'lookup',
          description: 'Looks a key up.',
          inputSchema: { type: 'object', properties: { key: { type: 'string' } } },
          execute: () => Promise.resolve({ content: 'value' }),
        };
        const turn = await runTurn(manager, sessionId, {
          backend,
          prompt: 'Find a.',
          tools: [lookup],
          model: 'fake-model',
        });
        for await (const _event of turn.events);
        await tracerProvider.forceFlush();
        const agent = byName('invoke_agent dev');
        expect(agent.attributes).toMatchObject({
          'gen_ai.provider.name': 'openai',
          'gen_ai.request.model': 'fake-model',
          'gen_ai.usage.input_tokens': 30,
          'gen_ai.usage.output_tokens': 7,
        });
        const chats = receiver.spans.filter((span) => span.name === 'chat fake-model');
        expect(chats.map((chat) => chat.parentSpanId)).toEqual([agent.spanId, agent.spanId]);
        expect(chats.map((chat) => chat.attributes['gen_ai.response.finish_reasons'])).toEqual([
          ['tool_calls'],
          ['stop'],
        ]);
        expect(chats[0]!.attributes).toMatchObject({
          'gen_ai.operation.name': 'chat',
          'gen_ai.response.model': 'fake-model-2025',
          'gen_ai.usage.input_tokens': 10,
        });
        expect(byName('execute_tool lookup').attributes).toMatchObject({
          'gen_ai.tool.call.id': 'call-1',
          'gen_ai.tool.name': 'lookup',
        });
      } finally {
        await manager.close();
        await server.close();
      }
    });
  });
});
