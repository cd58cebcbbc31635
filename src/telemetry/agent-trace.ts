import {
  context as otelContext,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import { MAIN_CONVERSATION, type ConversationBlock, type UnsequencedEvent, type Usage } from '../conversation/index.js';
import { ATTR, OPERATION, PARLEY_ATTR, providerNameOf } from './conventions.js';
import { captureMessageContent, genAiInstruments, parleyTracer } from './instruments.js';

/**
 * One agent turn as a trace: an `invoke_agent {role}` span, an `execute_tool {name}` span for each
 * tool call and a child `invoke_agent` span for each subagent thread, all read from the turn's own
 * stream events. Reading the events (rather than hooking every back end) gives every back end the
 * same spans, native ones included, whose tools run inside their CLI.
 *
 * Parents are passed explicitly, never read from a context manager: the turn's parent is
 * `AgentTraceInfo.parent`, and the back end asks `currentContext()` (handed to it as
 * `ExecuteRequest.traceContext`) for the parent of a `chat` span or of a tool call's own work (a
 * worker it dispatches). So the tree is right with or without AsyncLocalStorage, and a process that
 * registers none pays no async hooks on every promise.
 */
export interface AgentTraceInfo {
  /** The role or agent name: `invoke_agent {agentName}`. */
  agentName: string;
  /** Parley's session id: `gen_ai.conversation.id`. */
  sessionId: string;
  /** The back end's name (`claude-sdk`, `openai-compatible`, …). */
  backend: string;
  requestModel?: string;
  /** The user's prompt, recorded only when message content capture is on. */
  prompt?: string;
  /** A worker's agent id. */
  agentId?: string;
  /**
   * The span this turn belongs under: the `execute_tool` span that dispatched a worker, a workflow
   * phase, a client's `traceparent`. Default: the active context (a root span when no context
   * manager is registered).
   */
  parent?: Context;
}

export interface AgentTrace {
  /** The context the back end should run in now (the open tool call's, else the turn's). */
  currentContext(): Context;
  observe(event: UnsequencedEvent): void;
  /** Ends every open span; `error` marks the turn failed. Idempotent. */
  end(error?: unknown): void;
}

/**
 * Runs `fn` in the trace's current context (or as is, with no trace), for code that reads the
 * active context under a context manager a library user registered. Parley's own spans take their
 * parent explicitly.
 */
export function inAgentTrace<T>(agentTrace: AgentTrace | undefined, fn: () => T): T {
  return agentTrace ? otelContext.with(agentTrace.currentContext(), fn) : fn();
}

/** Starts a turn's trace, or returns undefined when no tracing SDK records it (the no-cost path). */
export function startAgentTrace(info: AgentTraceInfo): AgentTrace | undefined {
  const attributes: Attributes = {
    [ATTR.operationName]: OPERATION.invokeAgent,
    [ATTR.agentName]: info.agentName,
    [ATTR.conversationId]: info.sessionId,
    [ATTR.providerName]: providerNameOf(info.backend),
    [PARLEY_ATTR.backend]: info.backend,
  };
  if (info.requestModel) attributes[ATTR.requestModel] = info.requestModel;
  if (info.agentId) attributes[ATTR.agentId] = info.agentId;
  const parent = info.parent ?? otelContext.active();
  const span = parleyTracer().startSpan(
    `${OPERATION.invokeAgent} ${info.agentName}`,
    { kind: SpanKind.INTERNAL, attributes },
    parent,
  );
  if (!span.isRecording()) return undefined;
  const capture = captureMessageContent();
  if (capture && info.prompt !== undefined)
    span.setAttribute(
      ATTR.inputMessages,
      JSON.stringify([{ role: 'user', parts: [{ type: 'text', content: info.prompt }] }]),
    );
  return new TurnTrace(span, trace.setSpan(parent, span), info, capture);
}

/**
 * Wraps a back end's event stream: each event is observed as it arrives; the trace ends with the
 * stream (or its error). Events are pulled without switching the active context: the back end gets
 * its parents from `ExecuteRequest.traceContext`, and a switch per event would cost every delta a
 * context-manager round trip.
 */
export function traceAgentEvents<T extends UnsequencedEvent>(
  agentTrace: AgentTrace,
  source: AsyncIterable<T>,
): AsyncIterable<T> {
  return {
    [Symbol.asyncIterator]() {
      const iterator = source[Symbol.asyncIterator]();
      return {
        next() {
          let pending: Promise<IteratorResult<T>>;
          try {
            pending = iterator.next();
          } catch (error) {
            agentTrace.end(error);
            return Promise.reject(error as Error);
          }
          return pending.then(
            (result) => {
              if (result.done) agentTrace.end();
              else agentTrace.observe(result.value);
              return result;
            },
            (error: unknown) => {
              agentTrace.end(error);
              throw error;
            },
          );
        },
        async return(value?: unknown) {
          agentTrace.end();
          return (await iterator.return?.(value)) ?? { done: true, value: undefined };
        },
      };
    },
  };
}

interface OpenTool {
  span: Span;
  context: Context;
  conversationId: string;
}

class TurnTrace implements AgentTrace {
  private readonly tools = new Map<string, OpenTool>();
  private readonly subagents = new Map<string, { span: Span; context: Context }>();
  /** Open tool calls of the main thread, newest last: the newest is where the back end is now. */
  private readonly openMainTools: string[] = [];
  /** What the back end reported, summed; undefined until it reports any, so a turn with none records none (not 0). */
  private usage: Usage | undefined;
  private readonly finishReasons: string[] = [];
  private readonly started = performance.now();
  private responseModel: string | undefined;
  /** Likewise: undefined until a cost is reported, and dropped when a request's cost is unknown. */
  private costUsd: number | undefined;
  private costUnknown = false;
  private errorType: string | undefined;
  private lastText = '';
  private ended = false;

  constructor(
    private readonly span: Span,
    /** The turn's span in its parent's context: the parent of its tool calls and model calls. */
    private readonly context: Context,
    private readonly info: AgentTraceInfo,
    private readonly capture: boolean,
  ) {}

  currentContext(): Context {
    const newest = this.openMainTools.at(-1);
    return (newest !== undefined ? this.tools.get(newest)?.context : undefined) ?? this.context;
  }

  observe(event: UnsequencedEvent): void {
    if (this.ended) return;
    if (event.type === 'metadata_update') {
      if (event.conversationId === MAIN_CONVERSATION) this.addMetadata(event.metadata);
      return;
    }
    if (event.type !== 'block_start' && event.type !== 'block_complete') return;
    const block = event.block as ConversationBlock;
    const at = event.at;
    if (block.type === 'tool_use') {
      if (!this.tools.has(block.toolUseId))
        this.openTool(block.toolUseId, block.name, block.input, event.conversationId, at);
      if (event.type === 'block_complete' && block.status === 'error')
        this.closeTool(block.toolUseId, true, block.error ?? 'tool_error', undefined, at);
    } else if (block.type === 'tool_result' && event.type === 'block_complete') {
      this.closeTool(block.toolUseId, block.isError, block.isError ? 'tool_error' : undefined, block.content, at);
    } else if (block.type === 'subagent') {
      if (event.type === 'block_start' && !this.subagents.has(block.subagentId))
        this.openSubagent(block.subagentId, block.name, event.conversationId, at);
      if (event.type === 'block_complete') this.closeSubagent(block, at);
    } else if (
      block.type === 'system' &&
      block.subtype === 'error' &&
      event.type === 'block_complete' &&
      event.conversationId === MAIN_CONVERSATION
    ) {
      this.errorType = codeOf(block.data) ?? 'backend_error';
      this.span.setStatus({ code: SpanStatusCode.ERROR, message: block.content });
    } else if (
      block.type === 'assistant_text' &&
      event.type === 'block_complete' &&
      event.conversationId === MAIN_CONVERSATION
    ) {
      this.lastText = block.content;
    }
  }

  end(error?: unknown): void {
    if (this.ended) return;
    this.ended = true;
    for (const id of [...this.tools.keys()]) this.closeTool(id, true, 'interrupted', undefined, undefined);
    for (const [, open] of this.subagents) open.span.end();
    this.subagents.clear();
    if (error !== undefined) {
      this.errorType = error instanceof Error ? error.name : 'error';
      this.span.recordException(error instanceof Error ? error : String(error));
      this.span.setStatus({
        code: SpanStatusCode.ERROR,
        message: error instanceof Error ? error.message : String(error),
      });
    }
    const attributes: Attributes = {};
    if (this.usage) {
      attributes[ATTR.inputTokens] = this.usage.inputTokens;
      attributes[ATTR.outputTokens] = this.usage.outputTokens;
      if (this.usage.cacheReadTokens > 0) attributes[ATTR.cacheReadTokens] = this.usage.cacheReadTokens;
      if (this.usage.cacheWriteTokens > 0) attributes[ATTR.cacheWriteTokens] = this.usage.cacheWriteTokens;
    }
    if (this.costUsd !== undefined && !this.costUnknown) attributes[PARLEY_ATTR.costUsd] = this.costUsd;
    if (this.responseModel) attributes[ATTR.responseModel] = this.responseModel;
    if (this.finishReasons.length > 0) attributes[ATTR.finishReasons] = this.finishReasons;
    if (this.errorType) attributes[ATTR.errorType] = this.errorType;
    if (this.capture && this.lastText) {
      attributes[ATTR.outputMessages] = JSON.stringify([
        {
          role: 'assistant',
          parts: [{ type: 'text', content: this.lastText }],
          finish_reason: this.finishReasons.at(-1) ?? 'stop',
        },
      ]);
    }
    this.span.setAttributes(attributes);
    this.span.end();
    this.recordMetrics();
  }

  private recordMetrics(): void {
    const { tokenUsage, operationDuration } = genAiInstruments();
    if (this.usage) {
      tokenUsage.record(this.usage.inputTokens, this.metricAttributes(ATTR.tokenType, 'input'));
      tokenUsage.record(this.usage.outputTokens, this.metricAttributes(ATTR.tokenType, 'output'));
    }
    const duration = (performance.now() - this.started) / 1000;
    operationDuration.record(
      duration,
      this.errorType ? this.metricAttributes(ATTR.errorType, this.errorType) : this.metricAttributes(),
    );
  }

  /** One measurement's attributes, built whole (no spread copies: three per turn, on the hot path). */
  private metricAttributes(extraKey?: string, extraValue?: string): Attributes {
    const attributes: Attributes = {
      [ATTR.operationName]: OPERATION.invokeAgent,
      [ATTR.providerName]: providerNameOf(this.info.backend),
    };
    const model = this.info.requestModel ?? this.responseModel;
    if (model) attributes[ATTR.requestModel] = model;
    if (this.responseModel) attributes[ATTR.responseModel] = this.responseModel;
    if (extraKey !== undefined) attributes[extraKey] = extraValue;
    return attributes;
  }

  private addMetadata(metadata: {
    usage?: Usage;
    costUsd?: number;
    costUnknown?: boolean;
    model?: string;
    stopReason?: string;
  }): void {
    if (metadata.usage) {
      const usage = (this.usage ??= { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });
      usage.inputTokens += metadata.usage.inputTokens;
      usage.outputTokens += metadata.usage.outputTokens;
      usage.cacheReadTokens += metadata.usage.cacheReadTokens;
      usage.cacheWriteTokens += metadata.usage.cacheWriteTokens;
    }
    if (metadata.costUsd !== undefined) this.costUsd = (this.costUsd ?? 0) + metadata.costUsd;
    if (metadata.costUnknown) this.costUnknown = true;
    if (metadata.model) this.responseModel = metadata.model;
    if (metadata.stopReason && !this.finishReasons.includes(metadata.stopReason))
      this.finishReasons.push(metadata.stopReason);
  }

  private parentOf(conversationId: string): Context {
    if (conversationId === MAIN_CONVERSATION) return this.context;
    return this.subagents.get(conversationId)?.context ?? this.context;
  }

  private openTool(
    toolUseId: string,
    name: string,
    input: unknown,
    conversationId: string,
    at: number | undefined,
  ): void {
    const attributes: Attributes = {
      [ATTR.operationName]: OPERATION.executeTool,
      [ATTR.toolName]: name,
      [ATTR.toolCallId]: toolUseId,
    };
    if (this.capture) attributes[ATTR.toolCallArguments] = JSON.stringify(input ?? null);
    const span = parleyTracer().startSpan(
      `${OPERATION.executeTool} ${name}`,
      { attributes, ...(at !== undefined ? { startTime: at } : {}) },
      this.parentOf(conversationId),
    );
    this.tools.set(toolUseId, { span, context: trace.setSpan(this.parentOf(conversationId), span), conversationId });
    if (conversationId === MAIN_CONVERSATION) this.openMainTools.push(toolUseId);
  }

  private closeTool(
    toolUseId: string,
    failed: boolean,
    errorType: string | undefined,
    result: string | undefined,
    at: number | undefined,
  ): void {
    const open = this.tools.get(toolUseId);
    if (!open) return;
    this.tools.delete(toolUseId);
    const index = this.openMainTools.indexOf(toolUseId);
    if (index !== -1) this.openMainTools.splice(index, 1);
    if (this.capture && result !== undefined) open.span.setAttribute(ATTR.toolCallResult, result);
    if (failed) {
      open.span.setAttribute(ATTR.errorType, errorType ?? 'tool_error');
      open.span.setStatus({ code: SpanStatusCode.ERROR });
    }
    open.span.end(at);
  }

  private openSubagent(subagentId: string, name: string, conversationId: string, at: number | undefined): void {
    // A subagent of the main thread runs for the tool call that started it, when one is open.
    const parent = conversationId === MAIN_CONVERSATION ? this.currentContext() : this.parentOf(conversationId);
    const span = parleyTracer().startSpan(
      `${OPERATION.invokeAgent} ${name}`,
      {
        attributes: {
          [ATTR.operationName]: OPERATION.invokeAgent,
          [ATTR.agentName]: name,
          [ATTR.agentId]: subagentId,
          [ATTR.conversationId]: this.info.sessionId,
        },
        ...(at !== undefined ? { startTime: at } : {}),
      },
      parent,
    );
    this.subagents.set(subagentId, { span, context: trace.setSpan(parent, span) });
  }

  private closeSubagent(block: Extract<ConversationBlock, { type: 'subagent' }>, at: number | undefined): void {
    const open = this.subagents.get(block.subagentId);
    if (!open) return;
    this.subagents.delete(block.subagentId);
    if (block.usage)
      open.span.setAttributes({
        [ATTR.inputTokens]: block.usage.inputTokens,
        [ATTR.outputTokens]: block.usage.outputTokens,
      });
    if (block.costUsd !== undefined) open.span.setAttribute(PARLEY_ATTR.costUsd, block.costUsd);
    if (block.status === 'error') open.span.setStatus({ code: SpanStatusCode.ERROR });
    open.span.end(at);
  }
}

function codeOf(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const code = (data as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}
