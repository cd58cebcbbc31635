import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAiCompatibleBackend, type ToolDefinition } from '../../../src/backends/index.js';
import {
  rateLimitError,
  serverError,
  startFakeOpenAiServer,
  type FakeOpenAiServer,
} from '../../fixtures/fake-openai-server.js';
import {
  assistantText,
  checkEventStream,
  collect,
  describeBackendConformance,
  finalMetadata,
  mainBlocks,
  reduce,
  systemBlocks,
} from '../conformance.js';

const weatherTool: ToolDefinition = {
  name: 'get_weather',
  description: 'Weather for a city.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: (input) =>
    Promise.resolve({ content: JSON.stringify({ city: (input as { city: string }).city, temp: 20 }) }),
};

describeBackendConformance({
  name: 'openai-compatible',
  failureKinds: ['rate_limit', 'server_error', 'crash'],
  differences: { resume: 'managed continuity: the Chat Completions API is stateless, Parley rebuilds every request' },
  create: async () => {
    const server = await startFakeOpenAiServer();
    const backend = createOpenAiCompatibleBackend({
      baseURL: server.url,
      apiKey: 'dummy',
      model: 'fake-model',
      maxRetries: 0,
    });
    return {
      backend,
      request: (fields) => ({ sessionId: 'openai-session', ...fields }),
      script: {
        text: (text) => server.enqueue({ text }),
        stall: (text) => server.enqueue({ text, stall: true }),
        failure: (kind) => {
          if (kind === 'rate_limit') server.enqueue(rateLimitError());
          else if (kind === 'server_error') server.enqueue(serverError());
          else server.enqueue({ type: 'drop' });
          return {
            code:
              kind === 'rate_limit' ? 'RATE_LIMITED' : kind === 'server_error' ? 'SERVER_ERROR' : 'CONNECTION_FAILED',
          };
        },
        toolCall: (finalText) => {
          server.enqueue(
            { toolCalls: [{ id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }] },
            { text: finalText },
          );
          return { request: { tools: [weatherTool] }, toolName: 'get_weather' };
        },
      },
      teardown: () => server.close(),
    };
  },
});

describe('openai-compatible back end', () => {
  let server: FakeOpenAiServer;
  beforeAll(async () => {
    server = await startFakeOpenAiServer({ models: ['fake-model', 'other-model'] });
  });
  afterAll(() => server.close());
  beforeEach(() => {
    server.requests.length = 0;
  });

  const backend = (options: Parameters<typeof createOpenAiCompatibleBackend>[0] = {}) =>
    createOpenAiCompatibleBackend({
      baseURL: server.url,
      apiKey: 'dummy',
      model: 'fake-model',
      maxRetries: 0,
      ...options,
    });

  it('sends the system prompt and the user prompt, streaming with include_usage, and the key as a bearer token', async () => {
    server.enqueue({ text: 'ok' });
    await collect(backend().execute({ sessionId: 's', prompt: 'Hello?', systemPrompt: 'You are terse.' }));
    const sent = server.completions()[0]!;
    expect(sent).toMatchObject({
      model: 'fake-model',
      messages: [
        { role: 'system', content: 'You are terse.' },
        { role: 'user', content: 'Hello?' },
      ],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(sent['tools']).toBeUndefined();
    expect(server.requests[0]?.headers['authorization']).toBe('Bearer dummy');
  });

  it('an output schema is sent as a json_schema response format', async () => {
    server.enqueue({ text: '{"done":true}' });
    const schema = { type: 'object', properties: { done: { type: 'boolean' } }, required: ['done'] };
    await collect(backend().execute({ sessionId: 's', prompt: 'x', outputSchema: schema }));
    expect(server.completions()[0]?.['response_format']).toEqual({
      type: 'json_schema',
      json_schema: { name: 'output', schema, strict: false },
    });
  });

  it('a request model overrides the default model', async () => {
    server.enqueue({ text: 'ok' });
    await collect(backend().execute({ sessionId: 's', prompt: 'x', model: 'other-model' }));
    expect(server.completions()[0]?.['model']).toBe('other-model');
  });

  it('runs the tool loop: executes each call, feeds the result back, until the model stops calling tools', async () => {
    const seen: unknown[] = [];
    const recording: ToolDefinition = {
      ...weatherTool,
      execute: (input, options) => (seen.push(input), weatherTool.execute(input, options)),
    };
    server.enqueue(
      {
        text: 'Let me check.',
        toolCalls: [
          { id: 'call_a', name: 'get_weather', arguments: { city: 'Paris' } },
          { id: 'call_b', name: 'get_weather', arguments: { city: 'Oslo' } },
        ],
      },
      { toolCalls: [{ id: 'call_c', name: 'get_weather', arguments: { city: 'Rome' } }] },
      { text: 'Paris 20, Oslo 20, Rome 20.' },
    );
    const events = await collect(backend().execute({ sessionId: 's', prompt: 'Weather?', tools: [recording] }));
    checkEventStream(events);
    expect(seen).toEqual([{ city: 'Paris' }, { city: 'Oslo' }, { city: 'Rome' }]);
    const requests = server.completions();
    expect(requests).toHaveLength(3);
    expect(requests[0]?.['tools']).toEqual([
      {
        type: 'function',
        function: { name: 'get_weather', description: 'Weather for a city.', parameters: weatherTool.inputSchema },
      },
    ]);
    expect((requests[1]?.['messages'] as unknown[]).slice(1)).toEqual([
      {
        role: 'assistant',
        content: 'Let me check.',
        tool_calls: [
          { id: 'call_a', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_b', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"city":"Paris","temp":20}' },
      { role: 'tool', tool_call_id: 'call_b', content: '{"city":"Oslo","temp":20}' },
    ]);
    const blocks = mainBlocks(events);
    expect(blocks.map((block) => block.type)).toEqual([
      'assistant_text',
      'tool_use',
      'tool_result',
      'tool_use',
      'tool_result',
      'tool_use',
      'tool_result',
      'assistant_text',
    ]);
    expect(finalMetadata(events)).toMatchObject({ numTurns: 3, stopReason: 'end_turn' });
  });

  it('an unknown tool or arguments that are not JSON go back to the model as tool errors', async () => {
    server.enqueue(
      {
        toolCalls: [
          { id: 'c1', name: 'no_such_tool', arguments: {} },
          { id: 'c2', name: 'get_weather', arguments: '{"city": Par' },
        ],
      },
      { text: 'Sorry.' },
    );
    const events = await collect(backend().execute({ sessionId: 's', prompt: 'x', tools: [weatherTool] }));
    checkEventStream(events);
    const results = mainBlocks(events).filter((block) => block.type === 'tool_result');
    expect(results.map((block) => (block.type === 'tool_result' ? block.isError : undefined))).toEqual([true, true]);
    const toolMessages = (server.completions()[1]?.['messages'] as Array<{ role: string; content: string }>).filter(
      (message) => message.role === 'tool',
    );
    expect(toolMessages[0]?.content).toBe('Unknown tool "no_such_tool". Available tools: get_weather.');
    expect(toolMessages[1]?.content).toMatch(/^The arguments are not valid JSON/);
  });

  it('stops the tool loop at maxTurns with an error block saying how to continue', async () => {
    server.enqueue(
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'A' } }] },
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'B' } }] },
      { text: 'never requested' },
    );
    const events = await collect(backend().execute({ sessionId: 's', prompt: 'x', tools: [weatherTool], maxTurns: 2 }));
    checkEventStream(events);
    expect(server.completions()).toHaveLength(2);
    expect(systemBlocks(events, 'error')[0]).toMatchObject({ data: { code: 'MAX_TURNS' } });
    expect(server.pending).toBe(1);
    server.enqueue();
    await collect(backend().execute({ sessionId: 's', prompt: 'drain' }));
  });

  it('reports usage per request: cached tokens apart, each step its own metadata, the turn totals add up', async () => {
    server.enqueue(
      {
        toolCalls: [{ name: 'get_weather', arguments: { city: 'A' } }],
        usage: { prompt_tokens: 100, completion_tokens: 10, cached_tokens: 40 },
      },
      { text: 'done', usage: { prompt_tokens: 130, completion_tokens: 5 } },
    );
    const events = await collect(
      backend({
        models: [
          {
            id: 'fake-model',
            contextWindow: 32_000,
            pricing: { inputPerMillion: 1, outputPerMillion: 2, cacheReadPerMillion: 0.5 },
          },
        ],
      }).execute({ sessionId: 's', prompt: 'x', tools: [weatherTool] }),
    );
    const metadata = events.flatMap((event) => (event.type === 'metadata_update' ? [event.metadata] : []));
    expect(metadata).toHaveLength(2);
    expect(metadata[0]).toMatchObject({
      usage: { inputTokens: 60, cacheReadTokens: 40, outputTokens: 10 },
      costUsd: (60 * 1 + 10 * 2 + 40 * 0.5) / 1e6,
    });
    expect(metadata[0]?.turnComplete).toBeUndefined();
    expect(metadata[1]).toMatchObject({
      usage: { inputTokens: 130, outputTokens: 5 },
      contextWindow: 32_000,
      turnComplete: true,
    });
    const { metrics } = reduce(events);
    expect(metrics).toMatchObject({
      turns: 1,
      inputTokens: 190,
      outputTokens: 15,
      cacheReadTokens: 40,
      lastInputTokens: 130,
      contextWindow: 32_000,
      costUnknown: false,
    });
  });

  it('an unknown model has unknown cost, not zero; a known one is priced from the table; a provider cost wins', async () => {
    server.enqueue({ text: 'a' });
    expect(finalMetadata(await collect(backend().execute({ sessionId: 's', prompt: 'x' })))).toMatchObject({
      costUnknown: true,
    });
    server.enqueue({ text: 'b', usage: { prompt_tokens: 1_000_000, completion_tokens: 1_000_000 } });
    const known = finalMetadata(
      await collect(backend({ model: 'gpt-4o-mini' }).execute({ sessionId: 's', prompt: 'x' })),
    );
    expect(known).toMatchObject({ costUsd: 0.75, contextWindow: 128_000 });
    expect(known.costUnknown).toBeUndefined();
    server.enqueue({ text: 'c', usage: { prompt_tokens: 10, completion_tokens: 10, cost: 0.0042 } });
    expect(finalMetadata(await collect(backend().execute({ sessionId: 's', prompt: 'x' })))).toMatchObject({
      costUsd: 0.0042,
    });
  });

  it('streams reasoning from vLLM (reasoning_content) and Ollama (reasoning) as a thinking block before the text', async () => {
    for (const reasoningField of ['reasoning_content', 'reasoning'] as const) {
      server.enqueue({ reasoning: 'First I think about it.', reasoningField, text: 'The answer.' });
      const events = await collect(backend().execute({ sessionId: 's', prompt: 'x' }));
      checkEventStream(events);
      expect(mainBlocks(events).map((block) => [block.type, 'content' in block ? block.content : ''])).toEqual([
        ['thinking', 'First I think about it.'],
        ['assistant_text', 'The answer.'],
      ]);
    }
  });

  it('a message injected while tools run is sent to the model before its next request', async () => {
    let turn: ReturnType<ReturnType<typeof backend>['execute']> | undefined;
    const injecting: ToolDefinition = {
      ...weatherTool,
      execute: async (input, options) => {
        await turn!.inject('Also: use Celsius.');
        return weatherTool.execute(input, options);
      },
    };
    server.enqueue({ toolCalls: [{ name: 'get_weather', arguments: { city: 'A' } }] }, { text: 'In Celsius.' });
    turn = backend().execute({ sessionId: 's', prompt: 'x', tools: [injecting] });
    await collect(turn);
    const messages = server.completions()[1]?.['messages'] as Array<{ role: string; content: unknown }>;
    expect(messages.at(-1)).toEqual({ role: 'user', content: 'Also: use Celsius.' });
    await expect(turn.inject('late')).rejects.toMatchObject({ code: 'TURN_NOT_RUNNING' });
  });

  it('the request signal reaches the client: aborting closes the HTTP stream', async () => {
    server.enqueue({ text: 'partial reply', stall: true });
    const controller = new AbortController();
    const events = await collect(
      backend().execute({ sessionId: 's', prompt: 'x', signal: controller.signal }),
      (event) => {
        if (event.type === 'text_delta') controller.abort();
      },
    );
    checkEventStream(events);
    expect(systemBlocks(events, 'aborted')).toHaveLength(1);
    expect(finalMetadata(events)).toMatchObject({ stopReason: 'aborted', costUnknown: true });
  });

  it('a stream that goes silent ends the turn as timed out after idleTimeoutMs', async () => {
    server.enqueue({ text: 'then silence', stall: true });
    const events = await collect(backend({ idleTimeoutMs: 1500 }).execute({ sessionId: 's', prompt: 'x' }));
    checkEventStream(events);
    expect(assistantText(events)).toBe('then silence');
    expect(systemBlocks(events, 'error')[0]).toMatchObject({ data: { code: 'TIMEOUT', retryable: true } });
  });

  it('a server that never answers ends the turn as timed out after timeoutMs', async () => {
    server.enqueue({ type: 'hang' });
    const events = await collect(backend({ timeoutMs: 50 }).execute({ sessionId: 's', prompt: 'x' }));
    expect(systemBlocks(events, 'error')[0]).toMatchObject({ data: { code: 'TIMEOUT' } });
    expect(finalMetadata(events)).toMatchObject({ turnComplete: true });
  });

  it('connection refused names the URL and says to check the server and OPENAI_BASE_URL', async () => {
    const closed = createServer();
    const port = await new Promise<number>((resolve) =>
      closed.listen(0, '127.0.0.1', () => resolve((closed.address() as AddressInfo).port)),
    );
    await new Promise((resolve) => closed.close(resolve));
    const events = await collect(
      createOpenAiCompatibleBackend({ baseURL: `http://127.0.0.1:${port}/v1`, model: 'm', maxRetries: 0 }).execute({
        sessionId: 's',
        prompt: 'x',
      }),
    );
    const error = systemBlocks(events, 'error')[0]!;
    expect(error.data).toMatchObject({ code: 'CONNECTION_FAILED', retryable: true });
    expect(error.content).toContain(`http://127.0.0.1:${port}/v1`);
    expect(error.content).toContain('connection refused');
    expect(error.content).toContain('OPENAI_BASE_URL');
    expect(finalMetadata(events)).toMatchObject({ costUsd: 0 });
  });

  it('HTTP 401, 404 and 400 become authentication, model-not-found and bad-request errors with the server message', async () => {
    server.enqueue(
      {
        type: 'error',
        status: 401,
        body: {
          error: {
            message: 'Incorrect API key provided: dummy.',
            type: 'invalid_request_error',
            param: null,
            code: 'invalid_api_key',
          },
        },
      },
      {
        type: 'error',
        status: 404,
        body: {
          error: {
            message: 'The model `nope` does not exist',
            type: 'invalid_request_error',
            param: null,
            code: 'model_not_found',
          },
        },
      },
      {
        type: 'error',
        status: 400,
        body: {
          error: {
            message: 'maximum context length is 8192 tokens',
            type: 'invalid_request_error',
            param: 'messages',
            code: 'context_length_exceeded',
          },
        },
      },
    );
    const codes: unknown[] = [];
    for (let index = 0; index < 3; index++) {
      const events = await collect(backend().execute({ sessionId: 's', prompt: 'x' }));
      const error = systemBlocks(events, 'error')[0]!;
      codes.push((error.data as { code: string }).code);
      if (index === 0) expect(error.content).toContain('OPENAI_API_KEY');
      if (index === 2) expect(error.content).toContain('compact the session');
      expect(error.content).toMatch(/Incorrect API key|does not exist|maximum context length/);
    }
    expect(codes).toEqual(['AUTHENTICATION_FAILED', 'MODEL_NOT_FOUND', 'BAD_REQUEST']);
  });

  it('an error sent inside a 200 stream is read by its code, as an HTTP error would be, keeping the text so far', async () => {
    const streamError = (error: { message: string; type?: string; code?: string | number | null }) =>
      server.enqueue({ text: 'Partial answer', streamError: error });
    streamError({
      message: 'Incorrect API key provided: dummy.',
      type: 'invalid_request_error',
      code: 'invalid_api_key',
    });
    streamError({
      message: 'Rate limit reached for fake-model on tokens per min (TPM).',
      type: 'tokens',
      code: 'rate_limit_exceeded',
    });
    streamError({
      message: 'You exceeded your current quota.',
      type: 'insufficient_quota',
      code: 'insufficient_quota',
    });
    streamError({ message: 'The server had an error while processing your request.', type: 'server_error' });
    streamError({ message: 'maximum context length is 8192 tokens', code: 'context_length_exceeded' });
    streamError({ message: 'Model not found', code: 'model_not_found' });
    // OpenRouter and vLLM put an HTTP status in `code`.
    streamError({ message: 'Provider returned error', code: 502 });
    streamError({ message: 'Something odd happened.', type: 'odd_error', code: 'odd' });

    const failures: Array<{ code: string; retryable: boolean; content: string }> = [];
    for (let index = 0; index < 8; index++) {
      const events = await collect(backend().execute({ sessionId: 's', prompt: 'x' }));
      expect(assistantText(events)).toBe('Partial answer');
      const error = systemBlocks(events, 'error')[0]!;
      const data = error.data as { code: string; retryable: boolean; status?: number };
      expect(data.status).toBeUndefined();
      expect(error.content).not.toContain('no status');
      failures.push({ code: data.code, retryable: data.retryable, content: error.content });
    }
    expect(failures.map(({ code, retryable }) => [code, retryable])).toEqual([
      ['AUTHENTICATION_FAILED', false],
      ['RATE_LIMITED', true],
      ['RATE_LIMITED', false],
      ['SERVER_ERROR', true],
      ['BAD_REQUEST', false],
      ['MODEL_NOT_FOUND', false],
      ['SERVER_ERROR', true],
      ['UNKNOWN', false],
    ]);
    const [auth, rate, quota, serverSide, tooLong, unknownModel, gateway, odd] = failures.map(({ content }) => content);
    expect(auth).toContain('invalid_api_key');
    expect(auth).toContain('Set OPENAI_API_KEY');
    expect(auth).toContain('Incorrect API key provided');
    expect(rate).toContain('Wait');
    expect(quota).toContain('billing');
    expect(serverSide).toContain('server side');
    expect(tooLong).toContain('compact the session');
    expect(unknownModel).toContain('"fake-model"');
    expect(gateway).toContain('502');
    expect(odd).toContain('odd_error');
    expect(odd).toContain('Something odd happened.');
  });

  it('a remote URL without a key fails the turn without a request, saying which variable to set', async () => {
    const events = await collect(
      createOpenAiCompatibleBackend({ baseURL: 'https://api.example.invalid/v1' }).execute({
        sessionId: 's',
        prompt: 'x',
      }),
    );
    expect(systemBlocks(events, 'error')[0]).toMatchObject({ data: { code: 'AUTHENTICATION_FAILED' } });
    expect(systemBlocks(events, 'error')[0]?.content).toContain('OPENAI_API_KEY');
  });

  it('checkAvailability lists the models of a reachable server and explains an unreachable one', async () => {
    expect(await backend().checkAvailability!()).toEqual({
      available: true,
      detail: `${server.url} answered (2 models)`,
    });
    const unreachable = await createOpenAiCompatibleBackend({ baseURL: 'http://127.0.0.1:1/v1', maxRetries: 0 })
      .checkAvailability!();
    expect(unreachable.available).toBe(false);
    expect(unreachable.detail).toContain('http://127.0.0.1:1/v1');
  });

  it('describes itself as managed, with the configured model first', () => {
    const description = backend().describe();
    expect(description).toMatchObject({ name: 'openai-compatible', continuity: 'managed', defaultModel: 'fake-model' });
    expect(description.models[0]).toEqual({ id: 'fake-model' });
    expect(
      createOpenAiCompatibleBackend({ apiKey: 'k' })
        .describe()
        .models.some((model) => model.id === 'gpt-4o'),
    ).toBe(true);
  });
});
