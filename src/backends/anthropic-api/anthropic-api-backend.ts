import { randomUUID } from 'node:crypto';
import type Anthropic from '@anthropic-ai/sdk';
import type {
  ContentBlockParam,
  MessageCreateParamsStreaming,
  MessageParam,
  RawMessageStreamEvent,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages/messages';
import { MAIN_CONVERSATION, type UnsequencedEvent, type ToolUseBlock, type Usage } from '../../conversation/index.js';
import { abortable } from '../abort.js';
import { isInstance } from '../lazy-module.js';
import { anthropicSdk } from './sdk.js';
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
import { TurnEvents } from '../turn-events.js';
import { failureFromStatus } from './api-failures.js';

/** The registry name of the Anthropic Messages API back end. */
export const ANTHROPIC_API_BACKEND_NAME = 'anthropic-api';
export const ANTHROPIC_API_DEFAULT_MODEL = 'claude-sonnet-5-5';
const DEFAULT_ENDPOINT = 'https://api.anthropic.com';
/** `max_tokens` when neither the caller nor the model table says otherwise. */
const FALLBACK_MAX_OUTPUT_TOKENS = 8_192;
/** Upper bound of model requests in one turn's tool loop unless the request or options say otherwise. */
const DEFAULT_MAX_TURNS = 25;

/** Options of `createAnthropicApiBackend`: API key, model, thinking and limits. */
export interface AnthropicApiBackendOptions {
  /** Default: `ANTHROPIC_API_KEY` from `env`. */
  apiKey?: string;
  /** Default: `ANTHROPIC_BASE_URL` from `env`, else the public API. */
  baseURL?: string;
  /** Where `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL` are read. Default: `process.env`. */
  env?: Record<string, string | undefined>;
  defaultModel?: string;
  /** Models added to (or overriding) the built-in table: window, output limit, prices. */
  models?: ModelInfo[];
  /** Retries of the client on 429/5xx/connection errors. Default 2 (the client's); tests use 0. */
  maxRetries?: number;
  /** Per-request timeout in milliseconds. Default: the client's (10 minutes). */
  timeoutMs?: number;
  /** `max_tokens` of each request. Default: the model's output limit, at most 16k. */
  maxOutputTokens?: number;
  /** Extended thinking with this token budget; thinking blocks stream as `thinking` blocks. */
  thinking?: { budgetTokens: number };
  /** Model requests per turn in the tool loop. Default 25; `ExecuteRequest.maxTurns` wins. */
  maxTurns?: number;
  /** A ready client (custom fetch, middleware). When given, apiKey/baseURL/maxRetries/timeoutMs are ignored. */
  client?: Anthropic;
  /** Milliseconds since the epoch for events. Default `Date.now`. */
  clock?: () => number;
}

/**
 * The Anthropic Messages API as a managed back end: Parley builds each request (system prompt with
 * context, checkpoint and recent conversation; the new message as the user prompt), and this back
 * end streams the answer, runs Parley-provided tools in a loop until the model stops asking for
 * them, and prices each request from the model table (the API reports tokens, not cost).
 */
export function createAnthropicApiBackend(options: AnthropicApiBackendOptions = {}): AgentBackend {
  const env = options.env ?? process.env;
  const apiKey = options.apiKey ?? env['ANTHROPIC_API_KEY'];
  const baseURL = options.baseURL ?? env['ANTHROPIC_BASE_URL'] ?? DEFAULT_ENDPOINT;
  const extraModels = options.models ?? [];
  const defaultModel = options.defaultModel ?? ANTHROPIC_API_DEFAULT_MODEL;
  const clock = options.clock ?? Date.now;
  let client = options.client;

  /** The client, made on first use (the SDK loads then). The SDK is loaded even for an injected client: its error classes classify failures. */
  const getClient = async (): Promise<Anthropic> => {
    const sdk = await anthropicSdk.load();
    client ??= new sdk.default({
      apiKey: apiKey ?? null,
      baseURL,
      maxRetries: options.maxRetries ?? 2,
      ...(options.timeoutMs !== undefined ? { timeout: options.timeoutMs } : {}),
    });
    return client;
  };

  const models = (): ModelInfo[] => {
    const claude = KNOWN_MODELS.filter((model) => model.id.startsWith('claude-'));
    const overridden = new Set(extraModels.map((model) => model.id));
    return [...extraModels, ...claude.filter((model) => !overridden.has(model.id))].map((model) => ({ ...model }));
  };

  return {
    describe(): BackendDescription {
      return {
        name: ANTHROPIC_API_BACKEND_NAME,
        continuity: 'managed',
        models: models(),
        defaultModel,
        summary: `Anthropic Messages API at ${baseURL} (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL); Parley manages the conversation.`,
      };
    },

    checkAvailability() {
      if (!options.client && !apiKey) {
        return Promise.resolve({ available: false, detail: 'ANTHROPIC_API_KEY is not set.' });
      }
      return Promise.resolve({ available: true, detail: `API key set; endpoint ${baseURL}.` });
    },

    execute(request: ExecuteRequest): AgentTurn {
      const inbox: string[] = [];
      let ended = false;
      const modelId = request.model ?? request.profile?.model ?? defaultModel;
      const run = new ApiTurn({
        request,
        modelId,
        model: lookupModel(modelId, extraModels),
        endpoint: baseURL,
        options,
        clock,
        inbox,
        client: !options.client && !apiKey ? undefined : getClient,
      });
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        try {
          yield* run.play();
        } finally {
          ended = true;
        }
      }
      return {
        events: events(),
        inject(message: string): Promise<void> {
          if (ended) return Promise.reject(new TurnNotRunningError(ANTHROPIC_API_BACKEND_NAME));
          inbox.push(message);
          return Promise.resolve();
        },
      };
    },
  };
}

interface TurnContext {
  request: ExecuteRequest;
  modelId: string;
  model: ModelInfo | undefined;
  endpoint: string;
  options: AnthropicApiBackendOptions;
  clock: () => number;
  /** Messages injected while the turn runs; they join the next request. */
  inbox: string[];
  /** Undefined when no key is configured: the turn fails before any request. */
  client: (() => Promise<Anthropic>) | undefined;
}

type Outcome = { kind: 'continue' } | { kind: 'aborted' } | { kind: 'failed'; failure: BackendFailure };

/** One model request's stream, folded into blocks and the assistant message for the next request. */
interface RequestState {
  usage: Usage;
  model: string;
  stopReason: string | undefined;
  content: ContentBlockParam[];
  /** Per content index: what is open at that index. */
  open: Map<number, OpenBlock>;
}

type OpenBlock =
  | { kind: 'text'; blockId: string; text: string }
  | { kind: 'thinking'; blockId: string; text: string; signature: string }
  | { kind: 'tool'; block: ToolUseBlock; json: string };

class ApiTurn {
  private readonly events: TurnEvents;
  private readonly started: number;
  private readonly messages: MessageParam[];
  private readonly tools: ToolDefinition[];
  private readonly signal: AbortSignal | undefined;
  /** Usage of the request whose metadata is not reported yet (reported with the next request's start or at the end). */
  private pendingUsage: Usage | undefined;
  private requests = 0;
  private stopReason = 'end_turn';
  /** Tool calls started but not finished; closed as errors if the turn ends early. */
  private readonly unfinishedTools = new Map<string, ToolUseBlock>();

  constructor(private readonly context: TurnContext) {
    this.events = new TurnEvents({ clock: context.clock, newId: (kind) => `${kind}_${randomUUID()}` });
    this.started = context.clock();
    this.messages = [{ role: 'user', content: context.request.prompt }];
    this.tools = context.request.tools ?? [];
    this.signal = context.request.signal;
  }

  async *play(): AsyncGenerator<UnsequencedEvent> {
    let outcome: Outcome = { kind: 'continue' };
    const maxTurns = this.context.request.maxTurns ?? this.context.options.maxTurns ?? DEFAULT_MAX_TURNS;
    const getClient = this.context.client;
    if (!getClient) {
      outcome = {
        kind: 'failed',
        failure: {
          code: 'AUTHENTICATION_FAILED',
          backend: ANTHROPIC_API_BACKEND_NAME,
          message: 'No Anthropic API key is configured, so no request was sent.',
          advice:
            'Set ANTHROPIC_API_KEY (or pass apiKey in the anthropic-api back-end options) and send the message again.',
          retryable: false,
        },
      };
    }
    while (outcome.kind === 'continue' && getClient) {
      if (this.signal?.aborted) {
        outcome = { kind: 'aborted' };
        break;
      }
      if (this.requests >= maxTurns) {
        outcome = {
          kind: 'failed',
          failure: {
            code: 'MAX_TURNS',
            backend: ANTHROPIC_API_BACKEND_NAME,
            message: `The model was still calling tools after ${maxTurns} requests in this turn, so the turn stopped.`,
            advice: 'Send a message to let it continue, or raise maxTurns for this agent.',
            retryable: false,
          },
        };
        break;
      }
      if (this.pendingUsage) yield this.requestMetadata(this.pendingUsage, false);
      this.pendingUsage = undefined;
      this.requests += 1;
      const state: RequestState = {
        usage: zeroUsage(),
        model: this.context.modelId,
        stopReason: undefined,
        content: [],
        open: new Map(),
      };
      const chatSpan = startChatSpan(
        ANTHROPIC_API_BACKEND_NAME,
        this.context.modelId,
        this.context.request.traceContext?.(),
      );
      outcome = yield* this.stream(await getClient(), state);
      chatSpan?.end({
        responseModel: state.model,
        // A request refused before it began counted nothing: no usage, rather than a reported 0.
        usage: reported(state.usage),
        finishReason: state.stopReason,
        ...(outcome.kind === 'failed' ? { error: outcome.failure } : {}),
      });
      this.pendingUsage = state.usage;
      if (outcome.kind !== 'continue') break;
      this.stopReason = state.stopReason ?? 'end_turn';
      this.messages.push({ role: 'assistant', content: state.content });

      const toolUses = state.content.filter((block) => block.type === 'tool_use');
      if (state.stopReason === 'tool_use' && toolUses.length > 0) {
        const results: ContentBlockParam[] = [];
        for (const call of toolUses) {
          const result = yield* this.runTool(call.id, call.name, call.input);
          if (result === 'aborted') {
            outcome = { kind: 'aborted' };
            break;
          }
          results.push(result);
        }
        if (outcome.kind !== 'continue') break;
        this.messages.push({ role: 'user', content: [...results, ...this.takeInjected()] });
        continue;
      }
      // Messages injected while the model answered get their own answer in the same turn.
      const injected = this.takeInjected();
      if (injected.length > 0) {
        this.messages.push({ role: 'user', content: injected });
        continue;
      }
      break;
    }

    yield* this.events.closeAll();
    for (const block of this.unfinishedTools.values()) {
      const reason =
        outcome.kind === 'aborted'
          ? 'The turn was aborted before this tool ran.'
          : 'The turn failed before this tool ran.';
      yield* this.events.finishToolUse(block, { content: reason, isError: true });
    }
    this.unfinishedTools.clear();
    if (outcome.kind === 'aborted') {
      this.stopReason = 'aborted';
      yield* this.events.system('aborted', 'The turn was aborted; the output so far is kept.');
    } else if (outcome.kind === 'failed') {
      this.stopReason = 'error';
      yield* this.events.system('error', describeFailure(outcome.failure), { data: { ...outcome.failure } });
    }
    yield this.requestMetadata(this.pendingUsage, true);
  }

  private takeInjected(): ContentBlockParam[] {
    return this.context.inbox.splice(0).map((text) => ({ type: 'text' as const, text }));
  }

  private buildParams(): MessageCreateParamsStreaming {
    const { request, options, model } = this.context;
    const maxTokens = options.maxOutputTokens ?? Math.min(model?.maxOutputTokens ?? FALLBACK_MAX_OUTPUT_TOKENS, 16_000);
    let system = request.systemPrompt ?? request.profile?.instructions;
    if (request.outputSchema) {
      const rule = `Answer with only a JSON value that matches this JSON Schema, and nothing else:\n${JSON.stringify(request.outputSchema)}`;
      system = system ? `${system}\n\n${rule}` : rule;
    }
    return {
      model: this.context.modelId,
      max_tokens: options.thinking ? Math.max(maxTokens, options.thinking.budgetTokens + 1024) : maxTokens,
      messages: this.messages,
      stream: true,
      ...(system ? { system } : {}),
      ...(this.tools.length > 0
        ? {
            tools: this.tools.map((tool) => ({
              name: tool.name,
              description: tool.description,
              input_schema: { type: 'object' as const, ...tool.inputSchema },
            })),
          }
        : {}),
      ...(options.thinking
        ? { thinking: { type: 'enabled' as const, budget_tokens: options.thinking.budgetTokens } }
        : {}),
    };
  }

  private async *stream(client: Anthropic, state: RequestState): AsyncGenerator<UnsequencedEvent, Outcome> {
    try {
      const stream = await client.messages.create(this.buildParams(), this.signal ? { signal: this.signal } : {});
      for await (const event of stream) yield* this.onStreamEvent(event, state);
      if (this.signal?.aborted) return { kind: 'aborted' };
      if (state.stopReason === undefined) {
        return {
          kind: 'failed',
          failure: {
            code: 'CONNECTION_FAILED',
            backend: ANTHROPIC_API_BACKEND_NAME,
            message: `The answer from ${this.context.endpoint} ended before the model finished (no stop reason).`,
            advice: 'Send the message again; the partial answer above is kept.',
            retryable: true,
          },
        };
      }
      return { kind: 'continue' };
    } catch (error) {
      if (this.signal?.aborted || isInstance(error, anthropicSdk.loaded()?.APIUserAbortError))
        return { kind: 'aborted' };
      return { kind: 'failed', failure: this.classify(error) };
    } finally {
      // Blocks left open by an abort or an error keep their partial content.
      for (const open of state.open.values()) {
        if (open.kind === 'text' || open.kind === 'thinking') yield* this.events.completeText(open.blockId);
      }
      state.open.clear();
    }
  }

  private *onStreamEvent(event: RawMessageStreamEvent, state: RequestState): Generator<UnsequencedEvent> {
    switch (event.type) {
      case 'message_start': {
        state.model = event.message.model;
        addUsage(state.usage, event.message.usage, true);
        return;
      }
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'text') {
          const { blockId, events } = this.events.startText('assistant_text', { model: state.model });
          state.open.set(event.index, { kind: 'text', blockId, text: block.text });
          yield* events;
          if (block.text) yield* this.events.appendText(blockId, block.text);
        } else if (block.type === 'thinking') {
          const { blockId, events } = this.events.startText('thinking');
          state.open.set(event.index, { kind: 'thinking', blockId, text: block.thinking, signature: block.signature });
          yield* events;
          if (block.thinking) yield* this.events.appendText(blockId, block.thinking);
        } else if (block.type === 'redacted_thinking') {
          state.content.push({ type: 'redacted_thinking', data: block.data });
          yield* this.events.whole({
            type: 'thinking',
            id: this.events.newId('thinking'),
            createdAt: this.events.now(),
            content: '',
            redacted: true,
          });
        } else if (block.type === 'tool_use') {
          const at = this.events.now();
          const toolBlock: ToolUseBlock = {
            type: 'tool_use',
            id: this.events.newId('tool'),
            createdAt: at,
            toolUseId: block.id,
            name: block.name,
            input: {},
            status: 'pending',
          };
          state.open.set(event.index, { kind: 'tool', block: toolBlock, json: '' });
          this.unfinishedTools.set(block.id, toolBlock);
          yield { type: 'block_start', conversationId: MAIN_CONVERSATION, at, block: toolBlock };
        }
        return;
      }
      case 'content_block_delta': {
        const open = state.open.get(event.index);
        if (!open) return;
        const delta = event.delta;
        if (delta.type === 'text_delta' && open.kind === 'text') {
          open.text += delta.text;
          yield* this.events.appendText(open.blockId, delta.text);
        } else if (delta.type === 'thinking_delta' && open.kind === 'thinking') {
          open.text += delta.thinking;
          yield* this.events.appendText(open.blockId, delta.thinking);
        } else if (delta.type === 'signature_delta' && open.kind === 'thinking') {
          open.signature += delta.signature;
        } else if (delta.type === 'input_json_delta' && open.kind === 'tool') {
          open.json += delta.partial_json;
        }
        return;
      }
      case 'content_block_stop': {
        const open = state.open.get(event.index);
        if (!open) return;
        state.open.delete(event.index);
        if (open.kind === 'text') {
          state.content.push({ type: 'text', text: open.text });
          yield* this.events.completeText(open.blockId);
        } else if (open.kind === 'thinking') {
          state.content.push({ type: 'thinking', thinking: open.text, signature: open.signature });
          yield* this.events.completeText(open.blockId);
        } else {
          const input = parseToolInput(open.json);
          open.block.input = input;
          state.content.push({ type: 'tool_use', id: open.block.toolUseId, name: open.block.name, input });
          yield {
            type: 'block_update',
            conversationId: MAIN_CONVERSATION,
            at: this.events.now(),
            blockId: open.block.id,
            updates: { input, status: 'running' },
          };
        }
        return;
      }
      case 'message_delta': {
        state.stopReason = event.delta.stop_reason ?? state.stopReason;
        addUsage(state.usage, event.usage, false);
        return;
      }
      case 'message_stop':
        return;
    }
  }

  private async *runTool(
    toolUseId: string,
    name: string,
    input: unknown,
  ): AsyncGenerator<UnsequencedEvent, ToolResultBlockParam | 'aborted'> {
    const block = this.unfinishedTools.get(toolUseId);
    const finish = function* (
      this: ApiTurn,
      content: string,
      isError: boolean,
      output?: unknown,
    ): Generator<UnsequencedEvent> {
      if (!block) return;
      this.unfinishedTools.delete(toolUseId);
      yield* this.events.finishToolUse(
        { ...block, input },
        { content, isError, ...(output !== undefined ? { output } : {}) },
      );
    }.bind(this);

    const definition = this.tools.find((tool) => tool.name === name);
    if (!definition) {
      const available = this.tools.map((tool) => tool.name).join(', ') || 'none';
      const content = `Tool "${name}" is not available (available: ${available}).`;
      yield* finish(content, true);
      return { type: 'tool_result', tool_use_id: toolUseId, content, is_error: true };
    }
    try {
      const result = await abortable(
        definition.execute(input, {
          signal: this.signal,
          traceContext: this.context.request.traceContext?.(),
          toolUseId,
        }),
        this.signal,
      );
      if (result.aborted) {
        yield* finish('The tool call was aborted.', true);
        return 'aborted';
      }
      const output = result.value;
      yield* finish(output.content, output.isError ?? false, output.data);
      return {
        type: 'tool_result',
        tool_use_id: toolUseId,
        content: output.content,
        ...(output.isError ? { is_error: true } : {}),
      };
    } catch (error) {
      const content = `Tool "${name}" failed: ${error instanceof Error ? error.message : String(error)}`;
      yield* finish(content, true);
      return { type: 'tool_result', tool_use_id: toolUseId, content, is_error: true };
    }
  }

  /**
   * A request's usage and cost; on the final event also the turn's numbers. A turn that got no
   * answer at all reports no usage, so the session's context occupancy stays as it was.
   */
  private requestMetadata(usage: Usage | undefined, final: boolean): UnsequencedEvent {
    const model = this.context.model;
    const answered = reported(usage);
    const cost = answered ? computeCost(model?.pricing, answered) : { costUsd: 0 };
    return this.events.metadata({
      ...(answered ? { usage: answered } : {}),
      ...cost,
      model: this.context.modelId,
      ...(final
        ? {
            ...(model?.contextWindow ? { contextWindow: model.contextWindow } : {}),
            ...(model?.maxOutputTokens ? { maxOutputTokens: model.maxOutputTokens } : {}),
            numTurns: this.requests,
            durationMs: Math.max(0, this.context.clock() - this.started),
            stopReason: this.stopReason,
            turnComplete: true,
          }
        : {}),
    });
  }

  private classify(error: unknown): BackendFailure {
    const endpoint = this.context.endpoint;
    const model = this.context.modelId;
    const sdk = anthropicSdk.loaded();
    if (isInstance(error, sdk?.APIConnectionTimeoutError)) {
      return {
        code: 'TIMEOUT',
        backend: ANTHROPIC_API_BACKEND_NAME,
        message: `${endpoint} did not answer in time for ${model}.`,
        advice:
          'Send the message again; if it keeps timing out, raise timeoutMs in the anthropic-api back-end options.',
        retryable: true,
      };
    }
    if (isInstance(error, sdk?.APIConnectionError)) {
      const cause = describeCause(error);
      return {
        code: 'CONNECTION_FAILED',
        backend: ANTHROPIC_API_BACKEND_NAME,
        message: `Could not reach ${endpoint}${cause ? ` (${cause})` : ''}.`,
        advice: 'Check the network and ANTHROPIC_BASE_URL, then send the message again.',
        retryable: true,
      };
    }
    if (isInstance(error, sdk?.APIError)) {
      const body = error.error as { error?: { type?: string; message?: string } } | undefined;
      const errorType = body?.error?.type ?? error.type ?? undefined;
      const detail = body?.error?.message ?? error.apiMessage ?? error.message;
      const retryAfter = Number(error.headers?.get('retry-after'));
      return failureFromStatus(error.status, errorType ?? undefined, {
        backend: ANTHROPIC_API_BACKEND_NAME,
        endpoint,
        model,
        ...(detail ? { detail } : {}),
        ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}),
      });
    }
    const message = error instanceof Error ? error.message : String(error);
    const cause = error instanceof Error ? describeCause(error) : undefined;
    if (cause) {
      // fetch reports a connection cut mid-answer as a TypeError ("terminated") with the socket error as cause.
      return {
        code: 'CONNECTION_FAILED',
        backend: ANTHROPIC_API_BACKEND_NAME,
        message: `The connection to ${endpoint} broke during the answer (${cause}: ${message}).`,
        advice: 'Send the message again; the partial answer above is kept.',
        retryable: true,
      };
    }
    return {
      code: 'UNKNOWN',
      backend: ANTHROPIC_API_BACKEND_NAME,
      message: `The request to ${endpoint} failed: ${message}.`,
      advice: 'Send the message again; if it keeps failing, report this error.',
      retryable: false,
    };
  }
}

/** The usage the API reported, or undefined while every count is still 0 (it reported none). */
function reported(usage: Usage | undefined): Usage | undefined {
  if (!usage) return undefined;
  const any =
    usage.inputTokens > 0 || usage.outputTokens > 0 || usage.cacheReadTokens > 0 || usage.cacheWriteTokens > 0;
  return any ? usage : undefined;
}

function zeroUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
}

interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

/**
 * `message_start` carries input and cache counts (output 1); `message_delta` carries the final
 * output count and, on current API versions, the final input counts too: later values replace earlier ones.
 */
function addUsage(usage: Usage, wire: WireUsage, start: boolean): void {
  if (typeof wire.input_tokens === 'number') usage.inputTokens = wire.input_tokens;
  if (typeof wire.cache_read_input_tokens === 'number') usage.cacheReadTokens = wire.cache_read_input_tokens;
  if (typeof wire.cache_creation_input_tokens === 'number') usage.cacheWriteTokens = wire.cache_creation_input_tokens;
  if (typeof wire.output_tokens === 'number' && (!start || usage.outputTokens === 0))
    usage.outputTokens = wire.output_tokens;
}

function parseToolInput(json: string): unknown {
  if (json.trim() === '') return {};
  try {
    return JSON.parse(json) as unknown;
  } catch {
    // A cut-off stream leaves half a JSON object; keep the text so nothing is lost.
    return { _unparsedInput: json };
  }
}

function describeCause(error: Error): string | undefined {
  let cause: unknown = error.cause;
  while (cause instanceof Error) {
    const code = (cause as Error & { code?: unknown }).code;
    if (typeof code === 'string') return code;
    cause = cause.cause;
  }
  return undefined;
}
