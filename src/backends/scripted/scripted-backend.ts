import { MAIN_CONVERSATION, type UnsequencedEvent, type Usage } from '../../conversation/index.js';
import { abortable } from '../abort.js';
import type {
  AgentBackend,
  AgentTurn,
  BackendDescription,
  ExecuteRequest,
  ModelInfo,
  ToolDefinition,
  ToolExecuteOptions,
} from '../agent-backend.js';
import { describeFailure, TurnNotRunningError, type BackendFailure } from '../failures.js';
import { chunkText, counterIds, TurnEvents } from '../turn-events.js';
import type { ScriptedCall, ScriptedTurn, ScriptStep } from './script.js';

/** The registry name of the scripted back end. */
export const SCRIPTED_BACKEND_NAME = 'scripted';
/** The one model the scripted back end offers. */
export const SCRIPTED_MODEL: ModelInfo = {
  id: 'scripted-1',
  contextWindow: 200_000,
  maxOutputTokens: 8_192,
  // Scripted replies are free: a known price of zero, not an unknown one.
  pricing: { inputPerMillion: 0, outputPerMillion: 0, cacheReadPerMillion: 0, cacheWritePerMillion: 0 },
};

/** Options of `createScriptedBackend`: the scripted turns to play, and a clock for fixed timestamps. */
export interface ScriptedBackendOptions {
  /** Turns played in order, one per `execute`. */
  turns?: ScriptedTurn[];
  /** What to answer once the script runs out. Default: a text echoing the prompt (or JSON for an `outputSchema`). */
  defaultTurn?: (call: ScriptedCall) => ScriptStep[];
  /** Name in `describe()`; default `scripted`. */
  name?: string;
  /** The model reported in metadata. Default `scripted-1` (200k window, free). */
  model?: ModelInfo;
  /** Milliseconds since the epoch for `at`, `createdAt`, durations. Default `Date.now`. */
  clock?: () => number;
  /** Prefix of block, call and subagent ids; ids count up from 1 per back end. Default `scripted`. */
  idPrefix?: string;
}

/** A scripted back end: plays scripted turns, records every call. Deterministic given a clock. */
export interface ScriptedBackend extends AgentBackend {
  /** Every call received, in order (requests without their signal, plus injected messages). */
  readonly calls: ScriptedCall[];
  /** Turns not played yet. */
  readonly pendingTurns: number;
  /** Appends turns to the script. */
  enqueue(...turns: ScriptedTurn[]): void;
  execute(request: ExecuteRequest): AgentTurn & { inject(message: string): Promise<void> };
}

/** The offline default and the fake every test uses. */
export function createScriptedBackend(options: ScriptedBackendOptions = {}): ScriptedBackend {
  const name = options.name ?? SCRIPTED_BACKEND_NAME;
  const model = options.model ?? SCRIPTED_MODEL;
  const clock = options.clock ?? Date.now;
  const newId = counterIds(options.idPrefix ?? 'scripted');
  const script: ScriptedTurn[] = [...(options.turns ?? [])];
  const calls: ScriptedCall[] = [];
  const defaultTurn = options.defaultTurn ?? defaultReply;

  const description: BackendDescription = {
    name,
    continuity: 'managed',
    models: [model],
    defaultModel: model.id,
    summary: 'Plays scripted replies offline; the default when no model is configured.',
  };

  return {
    calls,
    get pendingTurns() {
      return script.length;
    },
    enqueue(...turns) {
      script.push(...turns);
    },
    describe: () => ({ ...description, models: description.models.map((entry) => ({ ...entry })) }),
    checkAvailability: () => Promise.resolve({ available: true, detail: 'always available (offline)' }),
    execute(request) {
      const { signal, traceContext, ...rest } = request;
      const call: ScriptedCall = { ...rest, injected: [] };
      calls.push(call);
      const turn = script.shift() ?? defaultTurn;
      const inbox = new Inbox();
      let ended = false;
      const player = new TurnPlayer({ name, model, clock, newId, call, inbox, signal, traceContext });
      async function* events(): AsyncGenerator<UnsequencedEvent> {
        try {
          yield* player.play(turn);
        } finally {
          ended = true;
          inbox.close();
        }
      }
      return {
        events: events(),
        inject(message) {
          if (ended) return Promise.reject(new TurnNotRunningError(name));
          call.injected.push(message);
          inbox.push(message);
          return Promise.resolve();
        },
      };
    },
  };
}

function defaultReply(call: ScriptedCall): ScriptStep[] {
  if (call.outputSchema) return [{ type: 'text', text: JSON.stringify(sampleFromSchema(call.outputSchema)) }];
  return [{ type: 'text', text: `Echo: ${call.prompt}` }];
}

/** A minimal value matching a JSON Schema, so a worker with an output schema gets a parseable answer offline. */
export function sampleFromSchema(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null) return null;
  const node = schema as Record<string, unknown>;
  if ('const' in node) return node['const'];
  if (Array.isArray(node['enum']) && node['enum'].length > 0) return node['enum'][0];
  if ('default' in node) return node['default'];
  const choices = (node['anyOf'] ?? node['oneOf']) as unknown;
  if (Array.isArray(choices) && choices.length > 0) return sampleFromSchema(choices[0]);
  const type = Array.isArray(node['type']) ? (node['type'][0] as unknown) : node['type'];
  switch (type) {
    case 'object': {
      const properties = (node['properties'] ?? {}) as Record<string, unknown>;
      const required = Array.isArray(node['required']) ? (node['required'] as string[]) : Object.keys(properties);
      return Object.fromEntries(required.map((key) => [key, sampleFromSchema(properties[key])]));
    }
    case 'array':
      return [];
    case 'string':
      return 'scripted';
    case 'integer':
    case 'number':
      return typeof node['minimum'] === 'number' ? node['minimum'] : 0;
    case 'boolean':
      return false;
    default:
      return null;
  }
}

/** Messages injected into a running turn, waited on by `await_injection` steps. */
class Inbox {
  private readonly messages: string[] = [];
  private waiter: (() => void) | undefined;
  private closed = false;

  push(message: string): void {
    this.messages.push(message);
    this.wake();
  }

  close(): void {
    this.closed = true;
    this.wake();
  }

  take(): string | undefined {
    return this.messages.shift();
  }

  /** Resolves once a message is waiting (or the inbox closed). */
  async next(): Promise<string | undefined> {
    while (this.messages.length === 0 && !this.closed) {
      await new Promise<void>((resolve) => (this.waiter = resolve));
    }
    return this.messages.shift();
  }

  private wake(): void {
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.();
  }
}

/** A word-and-punctuation count: the scripted model's own tokenizer (cheap, deterministic). */
export function countScriptedTokens(text: string | undefined): number {
  if (!text) return 0;
  return text.match(/[\p{L}\p{N}]+|[^\s\p{L}\p{N}]/gu)?.length ?? 0;
}

type Outcome = 'continue' | 'error' | 'aborted';

interface PlayerContext {
  name: string;
  model: ModelInfo;
  clock: () => number;
  newId: (kind: string) => string;
  call: ScriptedCall;
  inbox: Inbox;
  signal: AbortSignal | undefined;
  traceContext: ExecuteRequest['traceContext'];
}

/** Plays one turn's steps as stream events. */
class TurnPlayer {
  private readonly events: TurnEvents;
  private readonly started: number;
  private outputTokens = 0;
  private usageOverride: Partial<Usage> | undefined;
  private costUsd = 0;
  private toolCalls = 0;
  private stopReason = 'end_turn';

  constructor(private readonly context: PlayerContext) {
    this.events = new TurnEvents({ clock: context.clock, newId: context.newId });
    this.started = context.clock();
  }

  async *play(turn: ScriptedTurn): AsyncGenerator<UnsequencedEvent> {
    let outcome: Outcome = 'continue';
    try {
      const steps = typeof turn === 'function' ? await turn(this.context.call) : turn;
      outcome = yield* this.playSteps(steps, MAIN_CONVERSATION);
      // Messages injected but not awaited by a step are still answered before the turn ends.
      for (
        let message = this.context.inbox.take();
        outcome === 'continue' && message !== undefined;
        message = this.context.inbox.take()
      ) {
        yield* this.text(`Received: ${message}`, undefined, MAIN_CONVERSATION);
      }
    } catch (error) {
      yield* this.events.closeAll();
      const message = error instanceof Error ? error.message : String(error);
      yield* this.fail({
        code: 'SCRIPTED_ERROR',
        backend: this.context.name,
        message: `The scripted turn threw: ${message}.`,
        advice: 'Fix the script function that produced this turn.',
        retryable: false,
      });
      outcome = 'error';
    }
    if (outcome === 'aborted') {
      yield* this.events.closeAll();
      yield* this.events.system('aborted', 'The turn was aborted; the output so far is kept.');
      this.stopReason = 'aborted';
    }
    yield this.finalMetadata();
  }

  private async *playSteps(steps: ScriptStep[], conversationId: string): AsyncGenerator<UnsequencedEvent, Outcome> {
    for (const item of steps) {
      if (this.context.signal?.aborted) return 'aborted';
      const outcome = yield* this.playStep(item, conversationId);
      if (outcome !== 'continue') return outcome;
    }
    return this.context.signal?.aborted ? 'aborted' : 'continue';
  }

  private async *playStep(item: ScriptStep, conversationId: string): AsyncGenerator<UnsequencedEvent, Outcome> {
    switch (item.type) {
      case 'text':
        return yield* this.text(item.text, item.chunks, conversationId);
      case 'thinking': {
        const { blockId, events } = this.events.startText('thinking', {
          conversationId,
          redacted: item.redacted ?? false,
        });
        yield* events;
        return yield* this.stream(blockId, chunkText(item.text));
      }
      case 'tool':
        return yield* this.tool(item, conversationId);
      case 'subagent':
        return yield* this.subagent(item, conversationId);
      case 'usage':
        this.usageOverride = { ...this.usageOverride, ...item.usage };
        return 'continue';
      case 'cost':
        this.costUsd += item.costUsd;
        return 'continue';
      case 'error':
        yield* this.events.closeAll();
        yield* this.fail(
          {
            code: 'SCRIPTED_ERROR',
            backend: this.context.name,
            message: item.message,
            advice: item.advice ?? 'This failure was scripted.',
            retryable: item.retryable ?? false,
          },
          item.code,
          conversationId,
        );
        return 'error';
      case 'wait': {
        const result = await abortable(
          item.until instanceof AbortSignal ? signalled(item.until) : item.until,
          this.context.signal,
        );
        return result.aborted ? 'aborted' : 'continue';
      }
      case 'await_injection': {
        const result = await abortable(this.context.inbox.next(), this.context.signal);
        if (result.aborted) return 'aborted';
        if (result.value === undefined) return 'continue';
        const reply = item.reply ? item.reply(result.value) : `Received: ${result.value}`;
        return yield* this.text(reply, undefined, conversationId);
      }
    }
  }

  private async *text(
    text: string,
    chunks: string[] | undefined,
    conversationId: string,
  ): AsyncGenerator<UnsequencedEvent, Outcome> {
    const { blockId, events } = this.events.startText('assistant_text', {
      conversationId,
      model: this.context.model.id,
    });
    yield* events;
    return yield* this.stream(blockId, chunks ?? chunkText(text));
  }

  /** Streams chunks into an open block; an abort between chunks keeps what was streamed. */
  private async *stream(blockId: string, chunks: string[]): AsyncGenerator<UnsequencedEvent, Outcome> {
    for (const chunk of chunks) {
      if (this.context.signal?.aborted) return 'aborted';
      this.outputTokens += countScriptedTokens(chunk);
      yield* this.events.appendText(blockId, chunk);
    }
    yield* this.events.completeText(blockId);
    return 'continue';
  }

  private async *tool(
    item: Extract<ScriptStep, { type: 'tool' }>,
    conversationId: string,
  ): AsyncGenerator<UnsequencedEvent, Outcome> {
    this.toolCalls += 1;
    const { block, events } = this.events.startToolUse({
      name: item.name,
      input: item.input,
      conversationId,
      ...(item.toolUseId ? { toolUseId: item.toolUseId } : {}),
    });
    this.outputTokens += countScriptedTokens(JSON.stringify(item.input ?? null));
    yield* events;
    if (item.output !== undefined) {
      yield* this.events.finishToolUse(block, { content: item.output, isError: item.isError ?? false }, conversationId);
      return 'continue';
    }
    const definition = this.context.call.tools?.find((tool: ToolDefinition) => tool.name === item.name);
    if (!definition) {
      const available = this.context.call.tools?.map((tool) => tool.name).join(', ') || 'none';
      yield* this.events.finishToolUse(
        block,
        { content: `Tool "${item.name}" is not available (available: ${available}).`, isError: true },
        conversationId,
      );
      return 'continue';
    }
    try {
      const options: ToolExecuteOptions = {
        signal: this.context.signal,
        traceContext: this.context.traceContext?.(),
        toolUseId: block.toolUseId,
      };
      const result = await abortable(definition.execute(item.input, options), this.context.signal);
      if (result.aborted) {
        yield* this.events.finishToolUse(
          block,
          { content: 'The tool call was aborted.', isError: true },
          conversationId,
        );
        return 'aborted';
      }
      const output = result.value;
      yield* this.events.finishToolUse(
        block,
        {
          content: output.content,
          isError: output.isError ?? false,
          ...(output.data !== undefined ? { output: output.data } : {}),
        },
        conversationId,
      );
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      yield* this.events.finishToolUse(
        block,
        { content: `Tool "${item.name}" failed: ${message}`, isError: true },
        conversationId,
      );
    }
    return 'continue';
  }

  private async *subagent(
    item: Extract<ScriptStep, { type: 'subagent' }>,
    conversationId: string,
  ): AsyncGenerator<UnsequencedEvent, Outcome> {
    const subagentId = this.context.newId('subagent');
    const at = this.context.clock();
    const block = {
      type: 'subagent' as const,
      id: this.context.newId('block'),
      createdAt: at,
      subagentId,
      name: item.name,
      input: item.input,
      status: 'running' as const,
    };
    yield { type: 'block_start', conversationId, at, block };
    yield* this.events.system('subagent_start', `Subagent ${item.name} started`, { conversationId: subagentId });
    yield* this.events.whole(
      { type: 'user_message', id: this.context.newId('user'), createdAt: at, content: item.input },
      subagentId,
    );

    const before = this.outputTokens;
    const outcome = yield* this.playSteps(item.steps, subagentId);
    if (outcome === 'aborted') yield* this.events.closeAll();
    const usage: Usage = {
      inputTokens: countScriptedTokens(item.input),
      outputTokens: this.outputTokens - before,
      cacheReadTokens: 0,
      cacheWriteTokens: 0,
    };
    const status = outcome === 'continue' ? 'success' : 'error';
    yield* this.events.system(
      'subagent_end',
      `Subagent ${item.name} ${outcome === 'continue' ? 'completed' : outcome === 'aborted' ? 'was aborted' : 'failed'}`,
      {
        conversationId: subagentId,
      },
    );
    yield this.events.metadata({ usage, costUsd: 0, model: this.context.model.id }, subagentId);
    const output = item.output ?? lastText(item.steps);
    const completedAt = this.context.clock();
    yield {
      type: 'block_complete',
      conversationId,
      at: completedAt,
      block: { ...block, status, completedAt, usage, costUsd: 0, ...(output !== undefined ? { output } : {}) },
    };
    return outcome;
  }

  private *fail(
    failure: BackendFailure,
    code?: string,
    conversationId: string = MAIN_CONVERSATION,
  ): Generator<UnsequencedEvent> {
    this.stopReason = 'error';
    yield* this.events.system('error', describeFailure(failure), {
      conversationId,
      data: { ...failure, ...(code ? { code } : {}) },
    });
  }

  private finalMetadata(): UnsequencedEvent {
    const call = this.context.call;
    const estimatedInput =
      countScriptedTokens(call.systemPrompt) +
      countScriptedTokens(call.prompt) +
      call.injected.reduce((sum, text) => sum + countScriptedTokens(text), 0);
    const usage: Usage = {
      inputTokens: this.usageOverride?.inputTokens ?? estimatedInput,
      outputTokens: this.usageOverride?.outputTokens ?? this.outputTokens,
      cacheReadTokens: this.usageOverride?.cacheReadTokens ?? 0,
      cacheWriteTokens: this.usageOverride?.cacheWriteTokens ?? 0,
    };
    const model = this.context.model;
    return this.events.metadata({
      usage,
      costUsd: this.costUsd,
      model: model.id,
      ...(model.contextWindow ? { contextWindow: model.contextWindow } : {}),
      ...(model.maxOutputTokens ? { maxOutputTokens: model.maxOutputTokens } : {}),
      numTurns: 1 + this.toolCalls,
      durationMs: Math.max(0, this.context.clock() - this.started),
      stopReason: this.stopReason,
      turnComplete: true,
    });
  }
}

function signalled(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

function lastText(steps: ScriptStep[]): string | undefined {
  for (let index = steps.length - 1; index >= 0; index--) {
    const item = steps[index]!;
    if (item.type === 'text') return item.text;
  }
  return undefined;
}
