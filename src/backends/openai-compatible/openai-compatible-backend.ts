import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import type { UnsequencedEvent, TurnMetadata, Usage } from '../../conversation/index.js';
import type {
  AgentBackend,
  AgentTurn,
  BackendDescription,
  ExecuteRequest,
  ModelInfo,
  ToolDefinition,
} from '../agent-backend.js';
import { startChatSpan } from '../../telemetry/index.js';
import { describeFailure, TurnNotRunningError, type BackendFailure } from '../failures.js';
import { computeCost, KNOWN_MODELS, lookupModel } from '../pricing.js';
import { counterIds, TurnEvents } from '../turn-events.js';
import { describeOpenAiError, type FailureContext } from './errors.js';
import { isInstance } from '../lazy-module.js';
import { openAiSdk } from './sdk.js';

/** The registry name of the OpenAI-compatible back end. */
export const OPENAI_COMPATIBLE_BACKEND_NAME = 'openai-compatible';
export const OPENAI_DEFAULT_BASE_URL = 'https://api.openai.com/v1';
export const OPENAI_DEFAULT_MODEL = 'gpt-4.1-mini';

/** Options of `createOpenAiCompatibleBackend`: base URL, API key, model and limits. */
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

/** The OpenAI-compatible back end, with the models its server lists. */
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
  let client: OpenAI | undefined;
  /** The client, made on first use (the SDK loads then); undefined without a key. */
  const getClient = async (): Promise<OpenAI | undefined> => {
    if (!apiKey) return undefined;
    if (!client) {
      const { default: OpenAiClient } = await openAiSdk.load();
      client ??= new OpenAiClient({
        apiKey,
        baseURL,
        maxRetries: options.maxRetries ?? 2,
        ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
      });
    }
    return client;
  };

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
      const client = await getClient();
      if (!client)
        return { available: false, detail: missingKey(defaultModel).message + ' ' + missingKey(defaultModel).advice };
      try {
        const page = await client.models.list({
          maxRetries: 0,
          timeout: 3_000,
          ...(check.signal ? { signal: check.signal } : {}),
        });
        return { available: true, detail: `${baseURL} answered (${page.data.length} models)` };
      } catch (error) {
        const failure = describeOpenAiError(error, failureContext(defaultModel));
        return { available: false, detail: failure.message };
      }
    },
    execute(request) {
      const pending: string[] = [];
      let ended = false;
      const turn = new OpenAiTurn(
        {
          name,
          request,
          model: request.model ?? request.profile?.model ?? defaultModel,
          extraModels,
          events: new TurnEvents({ clock, newId }),
          clock,
          client: getClient,
          missingKey,
          failureContext,
          idleTimeoutMs: options.idleTimeoutMs ?? 300_000,
          maxTurns: request.maxTurns ?? options.maxTurns ?? 25,
          pending,
        },
        () => (ended = true),
      );
      return {
        events: turn.run(),
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
  client: () => Promise<OpenAI | undefined>;
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

/**
 * One turn: the tool loop over streamed requests. Chunks are turned into events by a plain
 * method and yielded from this one generator, so each event costs one generator hop, not one
 * per level of nesting (the hot path: a delta per chunk).
 */
class OpenAiTurn {
  private readonly events: TurnEvents;
  private readonly started: number;
  private apiMs = 0;
  private steps = 0;
  private lastStep: StepResult | undefined;

  constructor(
    private readonly context: TurnContext,
    private readonly onEnd: () => void,
  ) {
    this.events = context.events;
    this.started = context.clock();
  }

  async *run(): AsyncGenerator<UnsequencedEvent> {
    try {
      const { request } = this.context;
      const client = await this.context.client();
      const messages: ChatCompletionMessageParam[] = [];
      if (request.systemPrompt) messages.push({ role: 'system', content: request.systemPrompt });
      messages.push({ role: 'user', content: request.prompt });
      const tools = request.tools ?? [];
      const toolParams: ChatCompletionTool[] = tools.map((tool) => ({
        type: 'function',
        function: { name: tool.name, description: tool.description, parameters: tool.inputSchema },
      }));

      let ending: Ending | undefined = client
        ? undefined
        : { kind: 'failed', failure: this.context.missingKey(this.context.model) };
      while (client && !ending) {
        if (request.signal?.aborted) {
          ending = { kind: 'aborted' };
          break;
        }
        if (this.steps >= this.context.maxTurns) {
          ending = { kind: 'failed', failure: this.maxTurnsFailure() };
          break;
        }
        // The previous request was not the last: report its usage now, so each request's occupancy is its own.
        if (this.lastStep) yield this.events.metadata(this.stepMetadata(this.lastStep));
        this.lastStep = undefined;
        this.steps += 1;

        const step = new StepRequest(this.context, this.events);
        const requestStarted = this.context.clock();
        const chatSpan = startChatSpan(this.context.name, this.context.model, request.traceContext?.());
        try {
          const stream = await client.chat.completions.create(step.body(messages, toolParams), { signal: step.signal });
          for await (const chunk of stream) for (const event of step.handle(chunk)) yield event;
          // The client's stream ends quietly (no throw) when its signal aborts.
          if (step.signal.aborted) throw step.signal.reason;
        } catch (error) {
          chatSpan?.end({ error });
          for (const event of this.events.closeAll()) yield event;
          ending = step.ending(error);
          break;
        } finally {
          step.dispose();
          this.apiMs += this.context.clock() - requestStarted;
        }
        for (const event of this.events.closeAll()) yield event;
        const result = step.finish(this.steps);
        chatSpan?.end({ responseModel: result.responseModel, usage: result.usage, finishReason: result.finishReason });
        this.lastStep = result;

        if (result.toolCalls.length > 0) {
          messages.push({ role: 'assistant', content: result.text || null, tool_calls: result.toolCalls });
          for (const call of result.toolCalls) {
            const output = yield* this.runTool(call, tools);
            messages.push({ role: 'tool', tool_call_id: call.id, content: output });
            if (request.signal?.aborted) break;
          }
          if (request.signal?.aborted) {
            ending = { kind: 'aborted' };
            break;
          }
        } else {
          messages.push({ role: 'assistant', content: result.text });
        }
        const injected = this.context.pending.splice(0);
        for (const message of injected) messages.push({ role: 'user', content: message });
        if (result.toolCalls.length > 0 || injected.length > 0) continue;
        if (result.finishReason === 'length') {
          yield* this.events.system('info', 'The reply stopped at the maximum output length.');
          ending = { kind: 'done', stopReason: 'max_tokens' };
        } else if (result.finishReason === 'content_filter') {
          yield* this.events.system('info', "The provider's content filter stopped the reply.");
          ending = { kind: 'done', stopReason: 'content_filter' };
        } else {
          ending = { kind: 'done', stopReason: 'end_turn' };
        }
      }
      ending ??= { kind: 'aborted' };

      yield* this.events.closeAll();
      if (ending.kind === 'aborted')
        yield* this.events.system('aborted', 'The turn was aborted; the output so far is kept.');
      if (ending.kind === 'failed')
        yield* this.events.system('error', describeFailure(ending.failure), { data: ending.failure });
      const stopReason = ending.kind === 'done' ? ending.stopReason : ending.kind === 'aborted' ? 'aborted' : 'error';
      const last = this.lastStep ? this.stepMetadata(this.lastStep) : this.unreportedMetadata(ending);
      yield this.events.metadata({ ...last, ...this.turnTotals(), stopReason, turnComplete: true });
    } finally {
      this.onEnd();
    }
  }

  private maxTurnsFailure(): BackendFailure {
    return {
      backend: this.context.name,
      code: 'MAX_TURNS',
      message: `The model was still calling tools after ${this.context.maxTurns} requests in one turn.`,
      advice: 'Send a message to let it continue, or raise maxTurns for this role.',
      retryable: false,
    };
  }

  /** Runs one tool call; returns what is sent back to the model. Tool failures are the model's to handle. */
  private async *runTool(
    call: ChatCompletionMessageToolCall,
    tools: ToolDefinition[],
  ): AsyncGenerator<UnsequencedEvent, string> {
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
        const { signal, traceContext } = this.context.request;
        const result = await tool.execute(input, {
          signal,
          traceContext: traceContext?.(),
          toolUseId: block.toolUseId,
        });
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
    const info =
      lookupModel(this.context.model, this.context.extraModels) ?? lookupModel(responseModel, this.context.extraModels);
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
    Object.assign(
      metadata,
      step.providerCost !== undefined ? { costUsd: step.providerCost } : computeCost(info?.pricing, step.usage),
    );
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
      (ending.failure.status !== undefined ||
        ['AUTHENTICATION_FAILED', 'CONNECTION_FAILED', 'MAX_TURNS'].includes(ending.failure.code));
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

/** One streamed model request: its body, its signal (the turn's plus an idle watchdog), and what its chunks add up to. */
class StepRequest {
  readonly signal: AbortSignal;
  private readonly idle = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private lastActivity = performance.now();
  private readonly result: StepResult = {
    usage: undefined,
    providerCost: undefined,
    responseModel: undefined,
    finishReason: null,
    toolCalls: [],
    text: '',
  };
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  private textId: string | undefined;
  private thinkingId: string | undefined;

  constructor(
    private readonly context: TurnContext,
    private readonly events: TurnEvents,
  ) {
    const request = context.request;
    this.signal = request.signal ? AbortSignal.any([request.signal, this.idle.signal]) : this.idle.signal;
    // One timer per request, not one per chunk: chunks only stamp the time, and the timer re-arms
    // itself for what is left of the idle window.
    const check = (): void => {
      const remaining = context.idleTimeoutMs - (performance.now() - this.lastActivity);
      if (remaining <= 0) this.idle.abort();
      else this.timer = setTimeout(check, remaining);
    };
    this.timer = setTimeout(check, context.idleTimeoutMs);
  }

  body(messages: ChatCompletionMessageParam[], tools: ChatCompletionTool[]): ChatCompletionCreateParamsStreaming {
    const outputSchema = this.context.request.outputSchema;
    return {
      model: this.context.model,
      messages,
      stream: true,
      stream_options: { include_usage: true },
      ...(tools.length > 0 ? { tools } : {}),
      ...(outputSchema
        ? {
            response_format: {
              type: 'json_schema',
              json_schema: { name: 'output', schema: outputSchema, strict: false },
            },
          }
        : {}),
    };
  }

  handle(chunk: ChatCompletionChunk): UnsequencedEvent[] {
    this.lastActivity = performance.now();
    const result = this.result;
    const out: UnsequencedEvent[] = [];
    if (chunk.model) result.responseModel = chunk.model;
    if (chunk.usage) {
      result.usage = toUsage(chunk.usage);
      const cost = (chunk.usage as { cost?: unknown }).cost;
      if (typeof cost === 'number') result.providerCost = cost;
    }
    for (const choice of chunk.choices) {
      const delta = choice.delta as ChatCompletionChunk.Choice.Delta & {
        reasoning_content?: string | null;
        reasoning?: string | null;
      };
      const reasoning = delta.reasoning_content ?? delta.reasoning;
      if (reasoning) {
        if (!this.thinkingId || !this.events.isOpen(this.thinkingId)) {
          const started = this.events.startText('thinking');
          this.thinkingId = started.blockId;
          out.push(...started.events);
        }
        out.push(...this.events.appendText(this.thinkingId, reasoning));
      }
      if (delta.content) {
        if (this.thinkingId) out.push(...this.events.completeText(this.thinkingId));
        if (!this.textId || !this.events.isOpen(this.textId)) {
          const started = this.events.startText('assistant_text', {
            model: result.responseModel ?? this.context.model,
          });
          this.textId = started.blockId;
          out.push(...started.events);
        }
        result.text += delta.content;
        out.push(...this.events.appendText(this.textId, delta.content));
      }
      for (const call of delta.tool_calls ?? []) {
        const entry = this.calls.get(call.index) ?? { id: '', name: '', arguments: '' };
        if (call.id) entry.id = call.id;
        if (call.function?.name) entry.name += call.function.name;
        if (call.function?.arguments) entry.arguments += call.function.arguments;
        this.calls.set(call.index, entry);
      }
      if (choice.finish_reason) result.finishReason = choice.finish_reason;
    }
    return out;
  }

  /** Why the request ended early: the user's abort, a silent stream, or what the client threw. */
  ending(error: unknown): Ending {
    if (this.context.request.signal?.aborted) return { kind: 'aborted' };
    if (this.idle.signal.aborted) {
      return {
        kind: 'failed',
        failure: {
          backend: this.context.name,
          code: 'TIMEOUT',
          message: `The stream from ${this.context.failureContext(this.context.model).baseURL} sent nothing for ${Math.round(this.context.idleTimeoutMs / 1000)} s.`,
          advice:
            'Send the message again; if the server is slow to start (a local model loading), raise idleTimeoutMs.',
          retryable: true,
        },
      };
    }
    if (isInstance(error, openAiSdk.loaded()?.APIUserAbortError)) return { kind: 'aborted' };
    return { kind: 'failed', failure: describeOpenAiError(error, this.context.failureContext(this.context.model)) };
  }

  finish(step: number): StepResult {
    this.result.toolCalls = [...this.calls.entries()]
      .sort(([left], [right]) => left - right)
      .map(([index, call]) => ({
        id: call.id || `call_${step}_${index}`,
        type: 'function' as const,
        function: { name: call.name, arguments: call.arguments },
      }));
    return this.result;
  }

  dispose(): void {
    clearTimeout(this.timer);
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
