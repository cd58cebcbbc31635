import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  createAnthropicApiBackend,
  type AnthropicApiBackendOptions,
  type ExecuteRequest,
  type ToolDefinition,
} from '../../../src/backends/index.js';
import {
  isParleyError,
  type UnsequencedEvent,
  type SystemBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../../../src/conversation/index.js';
import {
  deferred,
  errorReply,
  lastToolResults,
  reply,
  startFakeAnthropicServer,
  text,
  thinking,
  toolUse,
  type FakeAnthropicServer,
} from '../../fixtures/fake-anthropic-server.js';
import {
  assistantText,
  checkEventStream,
  collect,
  finalMetadata,
  mainBlocks,
  reduce,
  systemBlocks,
} from '../conformance.js';

const MODEL = 'claude-haiku-4-5'; // in the pricing table: $1 / $5 per million, cache read $0.10, cache write $1.25

let server: FakeAnthropicServer;
beforeAll(async () => {
  server = await startFakeAnthropicServer();
});
afterAll(() => server.close());
afterEach(() => {
  server.requests.length = 0;
});

function backend(options: AnthropicApiBackendOptions = {}) {
  return createAnthropicApiBackend({ apiKey: 'test-key', baseURL: server.url, maxRetries: 0, ...options });
}

function run(
  options: AnthropicApiBackendOptions,
  request: Partial<ExecuteRequest> & { prompt: string },
): Promise<UnsequencedEvent[]> {
  return collect(backend(options).execute({ sessionId: 'api-session', model: MODEL, ...request }));
}

function errorData(events: UnsequencedEvent[]): Record<string, unknown> {
  const errors = systemBlocks(events, 'error');
  expect(errors).toHaveLength(1);
  return errors[0]!.data as Record<string, unknown>;
}

/** @anthropic-ai/sdk 1.x sends the key as a bearer token; the CLI and older clients use x-api-key. */
function keyOf(headers: Record<string, string | string[] | undefined>): string | undefined {
  const bearer = String(headers['authorization'] ?? '').replace(/^Bearer /, '');
  return (headers['x-api-key'] as string | undefined) ?? (bearer || undefined);
}

const echoTool: ToolDefinition = {
  name: 'echo',
  description: 'Echoes its input.',
  inputSchema: { type: 'object', properties: { say: { type: 'string' } }, required: ['say'] },
  execute: (input) =>
    Promise.resolve({
      content: `echo: ${(input as { say: string }).say}`,
      data: { said: (input as { say: string }).say },
    }),
};

describe('anthropic-api back end: requests on the wire', () => {
  it("sends the system prompt, the prompt, the model, max_tokens, tools, the key and the client's API version", async () => {
    server.enqueue(reply('ok'));
    await run({}, { prompt: 'Hello there', systemPrompt: 'You are a careful assistant.', tools: [echoTool] });
    const [sent] = server.messageRequests();
    // The pinned client (1.11.0) asks for API version 2026-10-21; the CLI asks for 2023-06-01. The event stream is the same.
    expect(sent!.headers['anthropic-version']).toBe('2026-10-21');
    expect(keyOf(sent!.headers)).toBe('test-key');
    expect(sent!.body?.system).toBe('You are a careful assistant.');
    expect(sent!.body?.model).toBe(MODEL);
    expect(sent!.body?.stream).toBe(true);
    expect(sent!.body?.['max_tokens']).toBe(16_000);
    expect(sent!.body?.messages).toEqual([{ role: 'user', content: 'Hello there' }]);
    expect(sent!.body?.tools).toEqual([
      { name: 'echo', description: 'Echoes its input.', input_schema: echoTool.inputSchema },
    ]);
  });

  it('reads ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL from the environment', async () => {
    server.enqueue(reply('from env'));
    const fromEnv = createAnthropicApiBackend({
      env: { ANTHROPIC_API_KEY: 'env-key', ANTHROPIC_BASE_URL: server.url },
      maxRetries: 0,
    });
    const events = await collect(fromEnv.execute({ sessionId: 's', prompt: 'hi', model: MODEL }));
    expect(assistantText(events)).toBe('from env');
    expect(keyOf(server.messageRequests()[0]!.headers)).toBe('env-key');
    expect(fromEnv.describe().summary).toContain(server.url);
  });

  it('asks for a JSON answer in the system prompt when the request has an output schema', async () => {
    server.enqueue(reply('{"done":true}'));
    const schema = { type: 'object', properties: { done: { type: 'boolean' } } };
    await run({}, { prompt: 'Report.', systemPrompt: 'Role.', outputSchema: schema });
    expect(String(server.messageRequests()[0]!.body?.system)).toContain(JSON.stringify(schema));
  });
});

describe('anthropic-api back end: usage, cost and the model table', () => {
  it('reports input, output, cache read and cache write tokens and prices them from the table', async () => {
    server.enqueue(
      reply('priced', {
        usage: {
          input_tokens: 1_000,
          output_tokens: 200,
          cache_read_input_tokens: 10_000,
          cache_creation_input_tokens: 2_000,
        },
      }),
    );
    const events = await run({}, { prompt: 'price me' });
    checkEventStream(events);
    const metadata = finalMetadata(events);
    expect(metadata.usage).toEqual({
      inputTokens: 1_000,
      outputTokens: 200,
      cacheReadTokens: 10_000,
      cacheWriteTokens: 2_000,
    });
    // 1000 × $1 + 200 × $5 + 10000 × $0.10 + 2000 × $1.25 per million
    expect(metadata.costUsd).toBeCloseTo((1_000 + 1_000 + 1_000 + 2_500) / 1_000_000, 12);
    expect(metadata.costUnknown).toBeUndefined();
    expect(metadata.contextWindow).toBe(200_000);
    expect(metadata.maxOutputTokens).toBe(64_000);
    expect(metadata.model).toBe(MODEL);
    expect(metadata.numTurns).toBe(1);
    expect(metadata.stopReason).toBe('end_turn');
  });

  it('an unknown model has an unknown cost, not zero', async () => {
    server.enqueue(reply('who am I'));
    const events = await run({}, { prompt: 'hi', model: 'claude-unreleased-9' });
    const metadata = finalMetadata(events);
    expect(metadata.costUnknown).toBe(true);
    expect(metadata.costUsd).toBeUndefined();
    expect(metadata.contextWindow).toBeUndefined();
    expect(reduce(events).metrics.costUnknown).toBe(true);
  });

  it('a model given in the options overrides the table', async () => {
    server.enqueue(reply('custom', { usage: { input_tokens: 1_000_000, output_tokens: 0 } }));
    const events = await run(
      {
        models: [
          {
            id: 'claude-custom',
            contextWindow: 50_000,
            maxOutputTokens: 4_000,
            pricing: { inputPerMillion: 2, outputPerMillion: 4 },
          },
        ],
      },
      { prompt: 'hi', model: 'claude-custom' },
    );
    const metadata = finalMetadata(events);
    expect(metadata.costUsd).toBeCloseTo(2, 9);
    expect(metadata.contextWindow).toBe(50_000);
    expect(server.messageRequests()[0]!.body?.['max_tokens']).toBe(4_000);
  });

  it('each request of a tool loop reports its own usage, so occupancy is the last request and totals are sums', async () => {
    server.enqueue(
      reply([toolUse('echo', { say: 'one' })], { usage: { input_tokens: 500, output_tokens: 30 } }),
      reply('final', { usage: { input_tokens: 700, output_tokens: 40 } }),
    );
    const events = await run({}, { prompt: 'loop', tools: [echoTool] });
    checkEventStream(events);
    const updates = events.filter((event) => event.type === 'metadata_update');
    expect(updates).toHaveLength(2);
    const metrics = reduce(events).metrics;
    expect(metrics.inputTokens).toBe(1_200);
    expect(metrics.outputTokens).toBe(70);
    expect(metrics.lastInputTokens).toBe(700);
    expect(metrics.turns).toBe(1);
    expect(metrics.costUsd).toBeCloseTo((1_200 * 1 + 70 * 5) / 1_000_000, 12);
    expect(finalMetadata(events).numTurns).toBe(2);
  });
});

describe('anthropic-api back end: streaming blocks', () => {
  it('streams thinking as a thinking block and sends it back with its signature in the next request of the loop', async () => {
    server.enqueue(
      reply([thinking('Let me think about the echo.', 'sig-123'), text('Calling it.'), toolUse('echo', { say: 'x' })]),
      reply('Done thinking.'),
    );
    const events = await run({ thinking: { budgetTokens: 2_000 } }, { prompt: 'think', tools: [echoTool] });
    checkEventStream(events);
    const blocks = mainBlocks(events);
    expect(blocks.map((block) => block.type)).toEqual([
      'thinking',
      'assistant_text',
      'tool_use',
      'tool_result',
      'assistant_text',
    ]);
    expect(blocks[0]!.type === 'thinking' && blocks[0]!.content).toBe('Let me think about the echo.');
    expect(events.some((event) => event.type === 'text_delta' && event.blockId === blocks[0]!.id)).toBe(true);
    const [first, second] = server.messageRequests();
    expect(first!.body?.['thinking']).toEqual({ type: 'enabled', budget_tokens: 2_000 });
    const assistant = second!.body?.messages?.[1];
    expect(assistant?.role).toBe('assistant');
    expect(assistant?.content).toEqual([
      { type: 'thinking', thinking: 'Let me think about the echo.', signature: 'sig-123' },
      { type: 'text', text: 'Calling it.' },
      expect.objectContaining({ type: 'tool_use', name: 'echo', input: { say: 'x' } }),
    ]);
  });

  it('tool_use goes pending → running (with its input) → success, and the result is fed back as tool_result', async () => {
    server.enqueue(reply([toolUse('echo', { say: 'hello' }, 'toolu_1')]), reply('The echo said hello.'));
    const events = await run({}, { prompt: 'echo', tools: [echoTool] });
    checkEventStream(events);
    const start = events.find((event) => event.type === 'block_start' && event.block.type === 'tool_use');
    expect(start?.type === 'block_start' && start.block.type === 'tool_use' && start.block.status).toBe('pending');
    const update = events.find((event) => event.type === 'block_update');
    expect(update?.type === 'block_update' && update.updates).toEqual({ input: { say: 'hello' }, status: 'running' });
    const blocks = mainBlocks(events);
    const use = blocks.find((block): block is ToolUseBlock => block.type === 'tool_use')!;
    const result = blocks.find((block): block is ToolResultBlock => block.type === 'tool_result')!;
    expect(use).toMatchObject({ toolUseId: 'toolu_1', status: 'success', input: { say: 'hello' } });
    expect(result).toMatchObject({
      toolUseId: 'toolu_1',
      content: 'echo: hello',
      isError: false,
      output: { said: 'hello' },
    });
    expect(lastToolResults(server.messageRequests()[1]!.body)).toEqual([
      { toolUseId: 'toolu_1', content: 'echo: hello', isError: false },
    ]);
  });

  it('a tool that throws and a tool that does not exist become error results the model sees, and the turn goes on', async () => {
    const failing: ToolDefinition = {
      ...echoTool,
      name: 'fragile',
      execute: () => Promise.reject(new Error('disk on fire')),
    };
    server.enqueue(
      reply([toolUse('fragile', {}, 'toolu_a'), toolUse('missing', {}, 'toolu_b')]),
      reply('Both failed.'),
    );
    const events = await run({}, { prompt: 'try', tools: [failing] });
    checkEventStream(events);
    const results = lastToolResults(server.messageRequests()[1]!.body);
    expect(results).toEqual([
      { toolUseId: 'toolu_a', content: 'Tool "fragile" failed: disk on fire', isError: true },
      { toolUseId: 'toolu_b', content: 'Tool "missing" is not available (available: fragile).', isError: true },
    ]);
    const uses = mainBlocks(events).filter((block): block is ToolUseBlock => block.type === 'tool_use');
    expect(uses.map((block) => block.status)).toEqual(['error', 'error']);
    expect(assistantText(events)).toBe('Both failed.');
  });

  it('stops a tool loop at maxTurns with a MAX_TURNS error block', async () => {
    server.enqueue(reply([toolUse('echo', { say: '1' })]), reply([toolUse('echo', { say: '2' })]));
    const events = await run({}, { prompt: 'loop forever', tools: [echoTool], maxTurns: 2 });
    checkEventStream(events);
    expect(errorData(events)['code']).toBe('MAX_TURNS');
    expect(server.messageRequests()).toHaveLength(2);
  });

  it('a message injected while the model answers is answered in the same turn', async () => {
    const gate = deferred();
    server.enqueue(reply('First answer, streaming slowly.', { hold: gate.promise }), reply('Answer to the injection.'));
    const turn = backend().execute({ sessionId: 's', prompt: 'start', model: MODEL });
    const held = server.nextHold();
    const collecting = collect(turn);
    await held;
    await turn.inject!('Also, one more thing.');
    gate.resolve();
    const events = await collecting;
    checkEventStream(events);
    expect(assistantText(events)).toBe('First answer, streaming slowly.Answer to the injection.');
    const second = server.messageRequests()[1]!.body!;
    expect(second.messages?.at(-1)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: 'Also, one more thing.' }],
    });
    await expect(turn.inject!('too late')).rejects.toSatisfy((error: unknown) =>
      isParleyError(error, 'TURN_NOT_RUNNING'),
    );
  });
});

describe('anthropic-api back end: abort', () => {
  it('an abort before the turn starts sends nothing and ends with an aborted block', async () => {
    const controller = new AbortController();
    controller.abort();
    const events = await run({}, { prompt: 'never sent', signal: controller.signal });
    checkEventStream(events);
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
    expect(server.messageRequests()).toHaveLength(0);
  });

  it('an abort mid-stream keeps the partial text and reports the input tokens already counted', async () => {
    server.enqueue(
      reply('Partial words then a very long stall', {
        hold: new Promise(() => undefined),
        usage: { input_tokens: 4_321 },
      }),
    );
    const controller = new AbortController();
    const turn = backend().execute({ sessionId: 's', prompt: 'stall', model: MODEL, signal: controller.signal });
    const events = await collect(turn, (event) => {
      if (event.type === 'text_delta') controller.abort();
    });
    checkEventStream(events);
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
    expect(assistantText(events)).toBe('Partial ');
    const metadata = finalMetadata(events);
    expect(metadata.usage?.inputTokens).toBe(4_321);
    expect(metadata.stopReason).toBe('aborted');
    expect(metadata.costUsd).toBeGreaterThan(0);
  });

  it('an abort while a tool runs closes the tool as an error and sends no further request', async () => {
    const started = deferred();
    const slow: ToolDefinition = {
      ...echoTool,
      name: 'slow',
      execute: (_input, { signal }) => {
        started.resolve();
        return new Promise((_resolve, reject) => signal?.addEventListener('abort', () => reject(new Error('aborted'))));
      },
    };
    server.enqueue(reply([toolUse('slow', {})]));
    const controller = new AbortController();
    const collecting = collect(
      backend().execute({
        sessionId: 's',
        prompt: 'slow tool',
        model: MODEL,
        tools: [slow],
        signal: controller.signal,
      }),
    );
    await started.promise;
    controller.abort();
    const events = await collecting;
    checkEventStream(events);
    const use = mainBlocks(events).find((block): block is ToolUseBlock => block.type === 'tool_use');
    expect(use?.status).toBe('error');
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
    expect(server.messageRequests()).toHaveLength(1);
  });
});

describe('anthropic-api back end: failures end the turn with an error block', () => {
  it('429 → RATE_LIMITED, retryable, names the endpoint and the retry-after wait', async () => {
    server.enqueue(
      errorReply(429, 'rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit', 7),
    );
    const events = await run({}, { prompt: 'x' });
    checkEventStream(events);
    const data = errorData(events);
    expect(data).toMatchObject({ code: 'RATE_LIMITED', retryable: true, status: 429 });
    const block = systemBlocks(events, 'error')[0] as SystemBlock;
    expect(block.content).toContain(server.url);
    expect(block.content).toContain('in 7 s');
    expect(block.content).toContain('per-minute rate limit');
    expect(finalMetadata(events).stopReason).toBe('error');
    // Nothing was answered: no usage, so the context occupancy of the session is left alone.
    expect(finalMetadata(events).usage).toBeUndefined();
    expect(finalMetadata(events).costUsd).toBe(0);
  });

  it('529 overloaded → SERVER_ERROR saying the API is overloaded', async () => {
    server.enqueue(errorReply(529, 'overloaded_error', 'Overloaded'));
    const events = await run({}, { prompt: 'x' });
    expect(errorData(events)).toMatchObject({ code: 'SERVER_ERROR', retryable: true, status: 529 });
    expect(systemBlocks(events, 'error')[0]!.content).toContain('overloaded');
  });

  it('an error event inside a 200 stream is read by its type, keeping the text so far', async () => {
    const midStream = (type: string, message: string) =>
      server.enqueue(reply('Partial answer', { streamError: { type, message } }));
    midStream('overloaded_error', 'Overloaded');
    midStream('authentication_error', 'invalid x-api-key');
    midStream('rate_limit_error', 'Number of request tokens has exceeded your per-minute rate limit');
    midStream('api_error', 'Internal server error');
    const failures: Array<Record<string, unknown> & { content: string }> = [];
    for (let index = 0; index < 4; index++) {
      const events = await run({}, { prompt: 'x' });
      checkEventStream(events);
      expect(assistantText(events)).toBe('Partial answer');
      const content = systemBlocks(events, 'error')[0]!.content;
      expect(content).not.toMatch(/HTTP (0|undefined)/);
      failures.push({ ...errorData(events), content });
    }
    expect(failures.map(({ code, retryable, status }) => [code, retryable, status])).toEqual([
      ['SERVER_ERROR', true, undefined],
      ['AUTHENTICATION_FAILED', false, undefined],
      ['RATE_LIMITED', true, undefined],
      ['SERVER_ERROR', true, undefined],
    ]);
    const [overloaded, authentication, rateLimited, serverSide] = failures.map(({ content }) => content);
    expect(overloaded).toContain('overloaded_error');
    expect(authentication).toContain('ANTHROPIC_API_KEY');
    expect(authentication).toContain('invalid x-api-key');
    expect(rateLimited).toContain('Wait');
    expect(serverSide).toContain('Internal server error');
  });

  it('400 invalid_request → BAD_REQUEST with the API message', async () => {
    server.enqueue(errorReply(400, 'invalid_request_error', 'prompt is too long: 250000 tokens > 200000 maximum'));
    const events = await run({}, { prompt: 'x' });
    expect(errorData(events)).toMatchObject({ code: 'BAD_REQUEST', retryable: false });
    expect(systemBlocks(events, 'error')[0]!.content).toContain('prompt is too long');
  });

  it('401 → AUTHENTICATION_FAILED pointing at ANTHROPIC_API_KEY', async () => {
    server.enqueue(errorReply(401, 'authentication_error', 'invalid x-api-key'));
    const events = await run({}, { prompt: 'x' });
    expect(errorData(events)).toMatchObject({ code: 'AUTHENTICATION_FAILED', retryable: false });
    expect(systemBlocks(events, 'error')[0]!.content).toContain('ANTHROPIC_API_KEY');
  });

  it('no API key configured → AUTHENTICATION_FAILED before any request', async () => {
    const keyless = createAnthropicApiBackend({ env: {}, baseURL: server.url, maxRetries: 0 });
    const events = await collect(keyless.execute({ sessionId: 's', prompt: 'x', model: MODEL }));
    checkEventStream(events);
    expect(errorData(events)['code']).toBe('AUTHENTICATION_FAILED');
    expect(server.messageRequests()).toHaveLength(0);
    expect((await keyless.checkAvailability!()).available).toBe(false);
  });

  it('a request that gets no answer in time → TIMEOUT', async () => {
    server.enqueue({ type: 'hang' });
    const events = await run({ timeoutMs: 150 }, { prompt: 'x' });
    checkEventStream(events);
    expect(errorData(events)).toMatchObject({ code: 'TIMEOUT', retryable: true });
  });

  it('connection refused → CONNECTION_FAILED naming the endpoint', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = createAnthropicApiBackend({ apiKey: 'k', baseURL: `http://127.0.0.1:${port}`, maxRetries: 0 });
    const events = await collect(refused.execute({ sessionId: 's', prompt: 'x', model: MODEL }));
    checkEventStream(events);
    const data = errorData(events);
    expect(data).toMatchObject({ code: 'CONNECTION_FAILED', retryable: true });
    expect(systemBlocks(events, 'error')[0]!.content).toContain(`127.0.0.1:${port}`);
  });

  it('a connection dropped mid-stream keeps the partial text and ends with an error block', async () => {
    server.enqueue(reply('Some words that will be cut off', { chunkSize: 5, disconnectAfterEvents: 5 }));
    const events = await run({}, { prompt: 'x' });
    checkEventStream(events);
    expect(assistantText(events).length).toBeGreaterThan(0);
    expect(errorData(events)['retryable']).toBe(true);
  });
});
