import OpenAI, { APIUserAbortError } from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { StreamEventDraft, TurnMetadata, Usage } from '../../conversation/index.js';
import type { AgentBackend, AgentTurn, BackendDescription, ExecuteRequest, ModelInfo, ToolDefinition } from '../agent-backend.js';
import { describeFailure, TurnNotRunningError, type BackendFailure } from '../failures.js';
import { computeCost, KNOWN_MODELS, lookupModel } from '../pricing.js';
import { counterIds, TurnEvents } from '../turn-events.js';
import { describeOpenAiError, type FailureContext } from './errors.js';

export const OPENAI_COMPATIBLE_BACKEND_NAME = 'openai-compatible';
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
export const OPENAI_DEFAULT_MODEL = 'gpt-4.1-mini';

export interface OpenAiCompatibleOptions {
  /** Name in `describe()`; default `openai-compatible`. */
  name?: string;
  /** OpenAI, Ollama (`http://localhost:11434/v1`), llama.cpp server, vLLM, ... Default: OpenAI. */
  baseURL?: string;
  /** Without a key, a local server gets a placeholder; a remote one ends each turn with an authentication error. */
  apiKey?: string;
  /** Default model when a request names none. */
  model?: string;
  /** Windows and prices of models the built-in table lacks (or overrides), e.g. from the config file. */
  models?: ModelInfo[];
  /** Client retries on 408/409/429/5xx/connection errors. Default 2 (the client's); use 0 in tests. */
  maxRetries?: number;
  /** Milliseconds to wait for the server to start answering a request. Default 10 minutes (the client's). */
  timeoutMs?: number;
  /** Milliseconds without a streamed chunk before the turn ends as timed out. Default 5 minutes. */
  idleTimeoutMs?: number;
  /** Model requests per turn in the tool loop, when the request sets no `maxTurns`. Default 25. */
  maxTurns?: number;
  /** Environment variable names shown in advice (config passes the ones it read). */
  apiKeyVariable?: string;
  baseUrlVariable?: string;
  clock?: () => number;
  idPrefix?: string;
}

const LOCAL_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1', '0.0.0.0']);

export function isLocalUrl(url: string): boolean {
  try {
    return LOCAL_HOSTS.has(new URL(url).hostname);
  } catch {
    return false;
  }
}

export interface OpenAiCompatibleBackend extends AgentBackend {
  execute(request: ExecuteRequest): AgentTurn & { inject(message: string): Promise<void> };
}

/**
 * A managed back end over the OpenAI Chat Completions API (`openai` client): streams text and
 * reasoning, runs Parley's tools in a loop until the model stops calling them, reports usage and
 * a cost from the pricing table (unknown model → unknown cost).
 */
export function createOpenAiCompatibleBackend(options: OpenAiCompatibleOptions = {}): OpenAiCompatibleBackend {
  const name = options.name ?? OPENAI_COMPATIBLE_BACKEND_NAME;
  const baseURL = (options.baseURL ?? OPENAI_DEFAULT_BASE_URL).replace(/\/+$/, '');
  const defaultModel = options.model ?? OPENAI_DEFAULT_MODEL;
  const extraModels = options.models ?? [];
  const clock = options.clock ?? Date.now;
  const newId = counterIds(options.idPrefix ?? 'openai');
  const apiKey = options.apiKey ?? (isLocalUrl(baseURL) ? 'local-server-needs-no-key' : undefined);
  const failureContext = (model: string): FailureContext => ({
    backend: name,
    baseURL,
    model,
    apiKeyVariable: options.apiKeyVariable ?? 'OPENAI_API_KEY',
    baseUrlVariable: options.baseUrlVariable ?? 'OPENAI_BASE_URL',
  });
  const client = apiKey
    ? new OpenAI({
        apiKey,
        baseURL,
        maxRetries: options.maxRetries ?? 2,
        ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
      })
    : undefined;

  const missingKey = (model: string): BackendFailure => ({
    backend: name,
    code: 'AUTHENTICATION_FAILED',
    message: `No API key is configured for ${baseURL}.`,
    advice: `Set ${failureContext(model).apiKeyVariable}, or point ${failureContext(model).baseUrlVariable} at a local server.`,
    retryable: false,
  });

  function describe(): BackendDescription {
    const models = new Map<string, ModelInfo>();
    models.set(defaultModel, lookupModel(defaultModel, extraModels) ?? { id: defaultModel });
    for (const model of extraModels) models.set(model.id, model);
    if (baseURL === OPENAI_DEFAULT_BASE_URL) {
      for (const model of KNOWN_MODELS) if (/^(gpt-|o\d)/.test(model.id)) models.set(model.id, model);
    }
    return {
      name,
      continuity: 'managed',
      models: [...models.values()],
      defaultModel,
      summary: `OpenAI Chat Completions API at ${baseURL} (OpenAI, Ollama, llama.cpp, vLLM).`,
    };
  }

  return {
    describe,
    async checkAvailability(check = {}) {
      if (!client) return { available: false, detail: missingKey(defaultModel).message + ' ' + missingKey(defaultModel).advice };
      try {
        const page = await client.models.list({ maxRetries: 0, timeout: 3_000, ...(check.signal ? { signal: check.signal } : {}) });
        return { available: true, detail: `${baseURL} answered (${page.data.length} models)` };
      } catch (error) {
        const failure = describeOpenAiError(error, failureContext(defaultModel));
        return { available: false, detail: failure.message };
      }
    },
    execute(request) {
      const pending: string[] = [];
      let ended = false;
      const turn = new OpenAiTurn({
        name,
        request,
        model: request.model ?? request.profile?.model ?? defaultModel,
        extraModels,
        events: new TurnEvents({ clock, newId }),
        clock,
        client,
        missingKey,
        failureContext,
        idleTimeoutMs: options.idleTimeoutMs ?? 300_000,
        maxTurns: request.maxTurns ?? options.maxTurns ?? 25,
        pending,
      });
      async function* events(): AsyncGenerator<StreamEventDraft> {
        try {
          yield* turn.run();
        } finally {
          ended = true;
        }
      }
      return {
        events: events(),
        inject(message) {
          if (ended) return Promise.reject(new TurnNotRunningError(name));
          pending.push(message);
          return Promise.resolve();
        },
      };
    },
  };
}

interface TurnContext {
  name: string;
  request: ExecuteRequest;
  model: string;
  extraModels: ModelInfo[];
  events: TurnEvents;
  clock: () => number;
  client: OpenAI | undefined;
  missingKey: (model: string) => BackendFailure;
  failureContext: (model: string) => FailureContext;
  idleTimeoutMs: number;
  maxTurns: number;
  /** Messages injected while the turn runs; delivered before the next model request. */
  pending: string[];
}

interface StepResult {
  usage: Usage | undefined;
  providerCost: number | undefined;
  responseModel: string | undefined;
  finishReason: string | null;
  toolCalls: ChatCompletionMessageToolCall[];
  text: string;
}

type Ending = { kind: 'done'; stopReason: string } | { kind: 'aborted' } | { kind: 'failed'; failure: BackendFailure };

class OpenAiTurn {
  private readonly events: TurnEvents;
  private readonly started: number;
  private apiMs = 0;
  private steps = 0;
  private lastStep: StepResult | undefined;

  constructor(private readonly context: TurnContext) {
    this.events = context.events;
    this.started = context.clock();
  }

  async *run(): AsyncGenerator<StreamEventDraft> {
    const { request, client } = this.context;
    const messages: ChatCompletionMessageParam[] = [];
    if (request.systemPrompt) messages.push({ role: 'system', content: request.systemPrompt });
    messages.push({ role: 'user', content: request.prompt });
    const tools = request.tools ?? [];

    let ending: Ending;
    if (!client) {
      ending = { kind: 'failed', failure: this.context.missingKey(this.context.model) };
    } else {
      ending = yield* this.loop(client, messages, tools);
    }

    yield* this.events.closeAll();
    if (ending.kind === 'aborted') yield* this.events.system('aborted', 'The turn was aborted; the output so far is kept.');
    if (ending.kind === 'failed') yield* this.events.system('error', describeFailure(ending.failure), { data: ending.failure });
    const stopReason = ending.kind === 'done' ? ending.stopReason : ending.kind === 'aborted' ? 'aborted' : 'error';
    const last = this.lastStep ? this.stepMetadata(this.lastStep) : this.unreportedMetadata(ending);
    yield this.events.metadata({ ...last, ...this.turnTotals(), stopReason, turnComplete: true });
  }

  private async *loop(client: OpenAI, messages: ChatCompletionMessageParam[], tools: ToolDefinition[]): AsyncGenerator<StreamEventDraft, Ending> {
    const { request } = this.context;
    const toolParams: ChatCompletionTool[] = tools.map((tool) => ({
      type: 'function',
      function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
    }));
    for (;;) {
      if (request.signal?.aborted) return { kind: 'aborted' };
      if (this.steps >= this.context.maxTurns) {
        return {
          kind: 'failed',
          failure: {
            backend: this.context.name,
            code: 'MAX_TURNS',
            message: `The model was still calling tools after ${this.context.maxTurns} requests in one turn.`,
            advice: 'Send a message to let it continue, or raise maxTurns for this role.',
            retryable: false,
          },
        };
      }
      // The previous step is not the last: report its usage now, so each request's occupancy is its own.
      if (this.lastStep) yield this.events.metadata(this.stepMetadata(this.lastStep));
      this.lastStep = undefined;
      this.steps += 1;
      const outcome = yield* this.step(client, messages, toolParams);
      if (outcome.kind !== 'step') return outcome.ending;
      const step = outcome.result;
      this.lastStep = step;

      if (step.toolCalls.length > 0) {
        messages.push({ role: 'assistant', content: step.text || null, tool_calls: step.toolCalls });
        for (const call of step.toolCalls) {
          const result = yield* this.runTool(call, tools);
          messages.push({ role: 'tool', tool_call_id: call.id, content: result });
          if (request.signal?.aborted) return { kind: 'aborted' };
        }
      } else {
        messages.push({ role: 'assistant', content: step.text });
      }
      const injected = this.context.pending.splice(0);
      for (const message of injected) messages.push({ role: 'user', content: message });
      if (step.toolCalls.length > 0 || injected.length > 0) continue;
      if (step.finishReason === 'length') {
        yield* this.events.system('info', 'The reply stopped at the maximum output length.');
        return { kind: 'done', stopReason: 'max_tokens' };
      }
      if (step.finishReason === 'content_filter') {
        yield* this.events.system('info', "The provider's content filter stopped the reply.");
        return { kind: 'done', stopReason: 'content_filter' };
      }
      return { kind: 'done', stopReason: 'end_turn' };
    }
  }

  /** One streamed model request. */
  private async *step(
    client: OpenAI,
    messages: ChatCompletionMessageParam[],
    tools: ChatCompletionTool[],
  ): AsyncGenerator<StreamEventDraft, { kind: 'step'; result: StepResult } | { kind: 'end'; ending: Ending }> {
    const { request, model } = this.context;
    const idle = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    const touch = (): void => {
      clearTimeout(timer);
      timer = setTimeout(() => idle.abort(), this.context.idleTimeoutMs);
    };
    const signal = request.signal ? AbortSignal.any([request.signal, idle.signal]) : idle.signal;
    const result: StepResult = { usage: undefined, providerCost: undefined, responseModel: undefined, finishReason: null, toolCalls: [], text: '' };
    const calls = new Map<number, { id: string; name: string; arguments: string }>();
    let textId: string | undefined;
    let thinkingId: string | undefined;
    const requestStarted = this.context.clock();
    try {
      touch();
      const stream = await client.chat.completions.create(
        {
          model,
          messages,
          stream: true,
          stream_options: { include_usage: true },
          ...(tools.length > 0 ? { tools } : {}),
          ...(request.outputSchema
            ? { response_format: { type: 'json_schema', json_schema: { name: 'output', schema: request.outputSchema, strict: false } } }
            : {}),
        },
        { signal },
      );
      for await (const chunk of stream) {
        touch();
        if (chunk.model) result.responseModel = chunk.model;
        if (chunk.usage) {
          result.usage = toUsage(chunk.usage);
          const cost = (chunk.usage as { cost?: unknown }).cost;
          if (typeof cost === 'number') result.providerCost = cost;
        }
        for (const choice of chunk.choices) {
          const delta = choice.delta as ChatCompletionChunk.Choice.Delta & { reasoning_content?: string | null; reasoning?: string | null };
          const reasoning = delta.reasoning_content ?? delta.reasoning;
          if (reasoning) {
            if (!thinkingId || !this.events.isOpen(thinkingId)) {
              const started = this.events.startText('thinking');
              thinkingId = started.blockId;
              yield* started.events;
            }
            yield* this.events.appendText(thinkingId, reasoning);
          }
          if (delta.content) {
            if (thinkingId) yield* this.events.completeText(thinkingId);
            if (!textId || !this.events.isOpen(textId)) {
              const started = this.events.startText('assistant_text', { model: result.responseModel ?? model });
              textId = started.blockId;
              yield* started.events;
            }
            result.text += delta.content;
            yield* this.events.appendText(textId, delta.content);
          }
          for (const call of delta.tool_calls ?? []) {
            const entry = calls.get(call.index) ?? { id: '', name: '', arguments: '' };
            if (call.id) entry.id = call.id;
            if (call.function?.name) entry.name += call.function.name;
            if (call.function?.arguments) entry.arguments += call.function.arguments;
            calls.set(call.index, entry);
          }
          if (choice.finish_reason) result.finishReason = choice.finish_reason;
        }
      }
      // The client's stream ends quietly (no throw) when its signal aborts.
      if (signal.aborted) throw signal.reason;
    } catch (error) {
      yield* this.events.closeAll();
      if (request.signal?.aborted) return { kind: 'end', ending: { kind: 'aborted' } };
      if (idle.signal.aborted) {
        return {
          kind: 'end',
          ending: {
            kind: 'failed',
            failure: {
              backend: this.context.name,
              code: 'TIMEOUT',
              message: `The stream from ${this.context.failureContext(model).baseURL} sent nothing for ${Math.round(this.context.idleTimeoutMs / 1000)} s.`,
              advice: 'Send the message again; if the server is slow to start (a local model loading), raise idleTimeoutMs.',
              retryable: true,
            },
          },
        };
      }
      if (error instanceof APIUserAbortError) return { kind: 'end', ending: { kind: 'aborted' } };
      return { kind: 'end', ending: { kind: 'failed', failure: describeOpenAiError(error, this.context.failureContext(model)) } };
    } finally {
      clearTimeout(timer);
      this.apiMs += this.context.clock() - requestStarted;
    }
    yield* this.events.closeAll();
    result.toolCalls = [...calls.entries()]
      .sort(([left], [right]) => left - right)
      .map(([index, call]) => ({
        id: call.id || `call_${this.steps}_${index}`,
        type: 'function' as const,
        function: { name: call.name, arguments: call.arguments },
      }));
    return { kind: 'step', result };
  }

  /** Runs one tool call; returns what is sent back to the model. Tool failures are the model's to handle. */
  private async *runTool(call: ChatCompletionMessageToolCall, tools: ToolDefinition[]): AsyncGenerator<StreamEventDraft, string> {
    if (call.type !== 'function') return 'Only function tools are supported.';
    let input: unknown;
    let parseError: string | undefined;
    try {
      input = call.function.arguments.trim() === '' ? {} : JSON.parse(call.function.arguments);
    } catch (error) {
      input = call.function.arguments;
      parseError = `The arguments are not valid JSON (${error instanceof Error ? error.message : String(error)}). Send the call again with a JSON object.`;
    }
    const { block, events } = this.events.startToolUse({ toolUseId: call.id, name: call.function.name, input });
    yield* events;
    const tool = tools.find((entry) => entry.name === call.function.name);
    let content: string;
    let isError = false;
    let output: unknown;
    if (parseError) {
      content = parseError;
      isError = true;
    } else if (!tool) {
      content = `Unknown tool "${call.function.name}". Available tools: ${tools.map((entry) => entry.name).join(', ') || 'none'}.`;
      isError = true;
    } else {
      try {
        const result = await tool.execute(input, this.context.request.signal ? { signal: this.context.request.signal } : {});
        content = result.content;
        isError = result.isError ?? false;
        output = result.data;
      } catch (error) {
        content = `Tool "${call.function.name}" failed: ${error instanceof Error ? error.message : String(error)}`;
        isError = true;
      }
    }
    yield* this.events.finishToolUse(block, { content, isError, ...(output !== undefined ? { output } : {}) });
    return content;
  }

  private modelMetadata(responseModel: string | undefined): { metadata: TurnMetadata; info: ModelInfo | undefined } {
    const info = lookupModel(this.context.model, this.context.extraModels) ?? lookupModel(responseModel, this.context.extraModels);
    const metadata: TurnMetadata = { model: responseModel ?? this.context.model };
    if (info?.contextWindow) metadata.contextWindow = info.contextWindow;
    if (info?.maxOutputTokens) metadata.maxOutputTokens = info.maxOutputTokens;
    return { metadata, info };
  }

  /** Usage, cost and model of one completed request. */
  private stepMetadata(step: StepResult): TurnMetadata {
    const { metadata, info } = this.modelMetadata(step.responseModel);
    if (!step.usage) return { ...metadata, costUnknown: true };
    metadata.usage = step.usage;
    Object.assign(metadata, step.providerCost !== undefined ? { costUsd: step.providerCost } : computeCost(info?.pricing, step.usage));
    return metadata;
  }

  /**
   * The last request reported no usage. A request the server refused (an HTTP error, no
   * connection, no key) costs nothing; one cut short while generating (abort, stalled stream)
   * was billed for what it generated, which nobody told us: unknown, not zero.
   */
  private unreportedMetadata(ending: Ending): TurnMetadata {
    const { metadata } = this.modelMetadata(undefined);
    const refused =
      ending.kind === 'failed' &&
      (ending.failure.status !== undefined || ['AUTHENTICATION_FAILED', 'CONNECTION_FAILED', 'MAX_TURNS'].includes(ending.failure.code));
    return refused || this.steps === 0 ? { ...metadata, costUsd: 0 } : { ...metadata, costUnknown: true };
  }

  private turnTotals(): TurnMetadata {
    return {
      numTurns: this.steps,
      durationMs: Math.max(0, this.context.clock() - this.started),
      durationApiMs: this.apiMs,
    };
  }
}

function toUsage(usage: NonNullable<ChatCompletionChunk['usage']>): Usage {
  // OpenAI counts cached prompt tokens inside prompt_tokens; Parley counts them apart.
  const cached = usage.prompt_tokens_details?.cached_tokens ?? 0;
  return {
    inputTokens: Math.max(0, usage.prompt_tokens - cached),
    outputTokens: usage.completion_tokens,
    cacheReadTokens: cached,
    cacheWriteTokens: 0,
  };
}
