import type { ModelUsage, SDKMessage, SDKResultMessage } from '@anthropic-ai/claude-agent-sdk';
import {
  MAIN_CONVERSATION,
  type UnsequencedEvent,
  type SubagentBlock,
  type ToolUseBlock,
  type TurnMetadata,
  type Usage,
} from '../../conversation/index.js';
import { describeFailure, type BackendFailure } from '../failures.js';
import { TurnEvents } from '../turn-events.js';
import { failureFromStatus } from '../anthropic-api/api-failures.js';
import type { CostState } from './native-storage.js';

/** The registry name of the Claude Agent SDK back end. */
export const CLAUDE_SDK_BACKEND_NAME = 'claude-sdk';

/** Tool names whose call runs a subagent (`Task` before Claude Code 2.1, `Agent` since). */
const SUBAGENT_TOOLS = new Set(['Task', 'Agent']);

export interface TurnMapperOptions {
  clock: () => number;
  newId: (kind: string) => string;
  nativeSessionId: string;
  /** The running totals the CLI will continue from (the transcript's last `cost-state`); zero for a new session. */
  baseline: CostState;
  /** Where the CLI sends requests, for error messages. */
  endpoint: string;
  /** The model asked for, until the CLI's init message names the one it uses. */
  model: string | undefined;
}

type OpenBlock =
  | { kind: 'text'; blockId: string }
  | { kind: 'tool'; toolUseId: string; name: string; json: string; block?: ToolUseBlock };

interface SubagentState {
  block: SubagentBlock;
  /** The conversation the subagent block lives in (its parent's thread). */
  conversationId: string;
  /** Backgrounded subagents report through task notifications, not through their tool_result. */
  background: boolean;
}

/**
 * Maps one query's SDK messages to Parley stream events. Synchronous and free of I/O, so recorded
 * message sequences test it without a CLI.
 *
 * - `stream_event`s (partial messages) give text and thinking deltas and the per-request usage;
 *   assembled `assistant` messages are used only for messages that were not streamed (subagents,
 *   whose stream events the SDK does not forward).
 * - `parent_tool_use_id` names the thread: a subagent's messages go to the conversation named by
 *   the id of the Task/Agent call that started it, which is also a `subagent` block in the parent.
 * - Each model request's usage is reported once: a `metadata_update` per request as the next one
 *   starts, and the rest with the `result` (so occupancy is the last request's, and sums are right).
 * - The `result` gives per-turn cost as the difference of the CLI's cumulative `total_cost_usd`
 *   from the baseline it restored, the context window and output limit of the model, turns and
 *   API time. Several results (a queued or a background-subagent turn) are all reported; the last
 *   one closes the Parley turn.
 */
export class ClaudeTurnMapper {
  readonly events: TurnEvents;
  /** The model the CLI runs (from `system/init`). */
  model: string | undefined;
  sawResult = false;
  failed = false;
  private baseline: CostState;
  private readonly started: number;
  private readonly streamedMessageIds = new Set<string>();
  /** Blocks being streamed, by conversation and content index (a subagent's stream may interleave with main's). */
  private readonly open = new Map<string, Map<number, OpenBlock>>();
  private readonly tools = new Map<string, { block: ToolUseBlock; conversationId: string }>();
  private readonly subagents = new Map<string, SubagentState>();
  /** Usage of the request being streamed, and the sum already reported for this result. */
  private currentCall: Usage | undefined;
  private reported: Usage = zeroUsage();
  private sawApiCall = false;
  private held: TurnMetadata | undefined;
  private lastStopReason: string | undefined;

  constructor(private readonly options: TurnMapperOptions) {
    this.events = new TurnEvents({ clock: options.clock, newId: options.newId });
    this.baseline = options.baseline;
    this.model = options.model;
    this.started = options.clock();
  }

  /** The totals the CLI restores on resume, read from the transcript before the query starts. */
  resetBaseline(baseline: CostState): void {
    this.baseline = baseline;
  }

  map(message: SDKMessage): UnsequencedEvent[] {
    switch (message.type) {
      case 'stream_event':
        return this.onStreamEvent(message.event as StreamEvent, message.parent_tool_use_id);
      case 'assistant':
        return this.onAssistant(
          message.message as AssistantMessage,
          message.parent_tool_use_id,
          message.error !== undefined,
        );
      case 'user':
        return this.onUser(message.message.content as UserContent, message.parent_tool_use_id, message.tool_use_result);
      case 'result':
        return this.onResult(message);
      case 'system':
        return this.onSystem(message as SystemMessage);
      default:
        return [];
    }
  }

  /**
   * Closes the turn: open blocks keep their partial content, unfinished tools and subagents end as
   * errors, an abort or a failure gets its system block, and the final metadata comes last.
   */
  finish(outcome: { aborted: boolean; failure?: BackendFailure | undefined }): UnsequencedEvent[] {
    const events: UnsequencedEvent[] = [...this.events.closeAll()];
    this.open.clear();
    const why = outcome.aborted ? 'The turn was aborted before this finished.' : 'The turn ended before this finished.';
    for (const [toolUseId, { block, conversationId }] of this.tools) {
      events.push(...this.events.finishToolUse(block, { content: why, isError: true }, conversationId));
      this.tools.delete(toolUseId);
    }
    for (const toolUseId of [...this.subagents.keys()]) events.push(...this.endSubagent(toolUseId, 'error', why));
    if (outcome.failure) {
      this.failed = true;
      events.push(...this.errorBlock(outcome.failure));
    }
    if (outcome.aborted)
      events.push(...this.events.system('aborted', 'The turn was aborted; the output so far is kept.'));

    let metadata = this.held;
    this.held = undefined;
    if (!metadata) {
      // No result: the CLI stopped before it reported one. Requests it made still count.
      const usage = this.unreported();
      metadata = {
        ...(isZero(usage) ? {} : { usage }),
        ...(this.sawApiCall ? { costUnknown: true } : { costUsd: 0 }),
        ...(this.model ? { model: this.model } : {}),
        nativeSessionId: this.options.nativeSessionId,
        durationMs: Math.max(0, this.options.clock() - this.started),
      };
    }
    const stopReason = outcome.aborted
      ? 'aborted'
      : this.failed
        ? 'error'
        : (metadata.stopReason ?? this.lastStopReason ?? 'end_turn');
    events.push(this.events.metadata({ ...metadata, stopReason, turnComplete: true }));
    return events;
  }

  private onStreamEvent(event: StreamEvent, parent: string | null): UnsequencedEvent[] {
    const conversationId = parent ?? MAIN_CONVERSATION;
    switch (event.type) {
      case 'message_start': {
        const events: UnsequencedEvent[] = [];
        if (parent === null) {
          if (this.currentCall) events.push(...this.reportCall(this.currentCall));
          this.currentCall = zeroUsage();
          addWireUsage(this.currentCall, event.message.usage);
          this.sawApiCall = true;
          if (event.message.model) this.model ??= event.message.model;
        }
        this.streamedMessageIds.add(event.message.id);
        this.open.set(conversationId, new Map());
        return events;
      }
      case 'content_block_start': {
        const block = event.content_block;
        if (block.type === 'text' || block.type === 'thinking') {
          const kind = block.type === 'text' ? 'assistant_text' : 'thinking';
          const { blockId, events } = this.events.startText(kind, {
            conversationId,
            ...(kind === 'assistant_text' && this.model ? { model: this.model } : {}),
          });
          this.openIn(conversationId).set(event.index, { kind: 'text', blockId });
          const initial = block.type === 'text' ? block.text : block.thinking;
          return [...events, ...(initial ? this.events.appendText(blockId, initial) : [])];
        }
        if (block.type === 'redacted_thinking') {
          return this.events.whole(
            {
              type: 'thinking',
              id: this.events.newId('thinking'),
              createdAt: this.events.now(),
              content: '',
              redacted: true,
            },
            conversationId,
          );
        }
        if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
          const open: OpenBlock = { kind: 'tool', toolUseId: block.id, name: block.name, json: '' };
          this.openIn(conversationId).set(event.index, open);
          if (SUBAGENT_TOOLS.has(block.name)) return [];
          // A tool call shows as soon as the model starts it; its input follows.
          const toolBlock = this.newToolBlock(block.id, block.name, {});
          open.block = toolBlock;
          this.tools.set(block.id, { block: toolBlock, conversationId });
          return [{ type: 'block_start', conversationId, at: toolBlock.createdAt, block: toolBlock }];
        }
        return [];
      }
      case 'content_block_delta': {
        const open = this.openIn(conversationId).get(event.index);
        if (!open) return [];
        const delta = event.delta;
        if (open.kind === 'text' && delta.type === 'text_delta' && typeof delta.text === 'string')
          return this.events.appendText(open.blockId, delta.text);
        if (open.kind === 'text' && delta.type === 'thinking_delta' && typeof delta.thinking === 'string')
          return this.events.appendText(open.blockId, delta.thinking);
        if (open.kind === 'tool' && delta.type === 'input_json_delta' && typeof delta.partial_json === 'string')
          open.json += delta.partial_json;
        return [];
      }
      case 'content_block_stop': {
        const open = this.openIn(conversationId).get(event.index);
        if (!open) return [];
        this.openIn(conversationId).delete(event.index);
        if (open.kind === 'text') return this.events.completeText(open.blockId);
        const input = parseJson(open.json);
        if (!open.block) return this.startSubagent(open.toolUseId, open.name, input, conversationId);
        open.block.input = input;
        return [
          {
            type: 'block_update',
            conversationId,
            at: this.events.now(),
            blockId: open.block.id,
            updates: { input, status: 'running' },
          },
        ];
      }
      case 'message_delta': {
        if (parent === null && this.currentCall) addWireUsage(this.currentCall, event.usage, true);
        if (event.delta?.stop_reason) this.lastStopReason = event.delta.stop_reason;
        return [];
      }
      default:
        return [];
    }
  }

  private openIn(conversationId: string): Map<number, OpenBlock> {
    let open = this.open.get(conversationId);
    if (!open) {
      open = new Map();
      this.open.set(conversationId, open);
    }
    return open;
  }

  private onAssistant(message: AssistantMessage, parent: string | null, isApiError: boolean): UnsequencedEvent[] {
    // Streamed messages are already shown; a synthetic API-error message is reported by the result.
    if (this.streamedMessageIds.has(message.id) || isApiError || message.model === '<synthetic>') return [];
    const conversationId = parent ?? MAIN_CONVERSATION;
    const events: UnsequencedEvent[] = [];
    for (const block of message.content ?? []) {
      if (block.type === 'text' && typeof block.text === 'string') {
        const at = this.events.now();
        events.push(
          ...this.events.whole(
            {
              type: 'assistant_text',
              id: this.events.newId('text'),
              createdAt: at,
              content: block.text,
              ...(message.model ? { model: message.model } : {}),
            },
            conversationId,
          ),
        );
      } else if (block.type === 'thinking' && typeof block.thinking === 'string') {
        events.push(
          ...this.events.whole(
            {
              type: 'thinking',
              id: this.events.newId('thinking'),
              createdAt: this.events.now(),
              content: block.thinking,
            },
            conversationId,
          ),
        );
      } else if (block.type === 'redacted_thinking') {
        events.push(
          ...this.events.whole(
            {
              type: 'thinking',
              id: this.events.newId('thinking'),
              createdAt: this.events.now(),
              content: '',
              redacted: true,
            },
            conversationId,
          ),
        );
      } else if (block.type === 'tool_use' && typeof block.id === 'string' && typeof block.name === 'string') {
        if (this.tools.has(block.id) || this.subagents.has(block.id)) continue;
        if (SUBAGENT_TOOLS.has(block.name)) {
          events.push(...this.startSubagent(block.id, block.name, block.input, conversationId));
          continue;
        }
        const toolBlock = this.newToolBlock(block.id, block.name, block.input ?? {});
        this.tools.set(block.id, { block: toolBlock, conversationId });
        events.push(
          { type: 'block_start', conversationId, at: toolBlock.createdAt, block: toolBlock },
          {
            type: 'block_update',
            conversationId,
            at: toolBlock.createdAt,
            blockId: toolBlock.id,
            updates: { status: 'running' },
          },
        );
      }
    }
    return events;
  }

  private onUser(content: UserContent, parent: string | null, structured: unknown): UnsequencedEvent[] {
    // The user's own text (prompts, "[Request interrupted by user]", compaction summaries) is not
    // new output: Parley already holds the prompt, and aborts and compactions get their own blocks.
    if (typeof content === 'string') return [];
    const conversationId = parent ?? MAIN_CONVERSATION;
    const results = content.filter((block) => block.type === 'tool_result');
    const events: UnsequencedEvent[] = [];
    for (const result of results) {
      const toolUseId = String(result.tool_use_id ?? '');
      const text = contentText(result.content);
      const isError = result.is_error === true;
      const subagent = this.subagents.get(toolUseId);
      if (subagent) {
        if (!subagent.background) events.push(...this.endSubagent(toolUseId, isError ? 'error' : 'success', text));
        continue;
      }
      const tool = this.tools.get(toolUseId);
      const output = results.length === 1 && structured !== undefined ? { output: structured } : {};
      if (tool) {
        this.tools.delete(toolUseId);
        events.push(
          ...this.events.finishToolUse(tool.block, { content: text, isError, ...output }, tool.conversationId),
        );
      } else {
        const at = this.events.now();
        events.push(
          ...this.events.whole(
            {
              type: 'tool_result',
              id: this.events.newId('result'),
              createdAt: at,
              toolUseId: toolUseId || 'unknown',
              content: text,
              isError,
              ...output,
            },
            conversationId,
          ),
        );
      }
    }
    return events;
  }

  private onSystem(message: SystemMessage): UnsequencedEvent[] {
    switch (message.subtype) {
      case 'init':
        if (typeof message.model === 'string') this.model = message.model;
        return [];
      case 'compact_boundary': {
        const metadata = message.compact_metadata ?? {};
        const trigger = metadata.trigger === 'manual' ? 'manual' : 'auto';
        const preTokens = typeof metadata.pre_tokens === 'number' ? metadata.pre_tokens : 0;
        const postTokens = typeof metadata.post_tokens === 'number' ? metadata.post_tokens : undefined;
        const after = postTokens !== undefined ? `, ${postTokens} after` : '';
        return this.events.system(
          'compaction',
          `Claude Code compacted the context (${trigger}): ${preTokens} tokens before${after}.`,
          {
            data: {
              trigger,
              preTokens,
              ...(postTokens !== undefined ? { postTokens } : {}),
              ...(typeof metadata.duration_ms === 'number' ? { durationMs: metadata.duration_ms } : {}),
              native: true,
            },
          },
        );
      }
      case 'api_retry': {
        const status = typeof message.error_status === 'number' ? `HTTP ${message.error_status}` : 'no response';
        return this.events.system(
          'info',
          `The API failed (${status}, ${String(message.error ?? 'unknown')}); Claude Code retries in ${Math.round(Number(message.retry_delay_ms ?? 0))} ms (attempt ${String(message.attempt)} of ${String(message.max_retries)}).`,
          {
            data: {
              kind: 'api_retry',
              status: message.error_status,
              error: message.error,
              attempt: message.attempt,
              maxRetries: message.max_retries,
            },
          },
        );
      }
      case 'permission_denied':
        return this.events.system(
          'info',
          `Permission denied for ${String(message.tool_name)}: ${String(message.message ?? '')}`,
          {
            data: { kind: 'permission_denied', toolName: message.tool_name, toolUseId: message.tool_use_id },
          },
        );
      case 'status':
        if (message.compact_result === 'failed') {
          return this.events.system(
            'info',
            `Claude Code could not compact the context (${String(message.compact_error ?? 'unknown reason')}).`,
            {
              data: { kind: 'compaction_failed', error: message.compact_error },
            },
          );
        }
        return [];
      case 'task_started':
        if (typeof message.tool_use_id === 'string') {
          const subagent = this.subagents.get(message.tool_use_id);
          if (subagent && message.is_backgrounded === true) subagent.background = true;
        }
        return [];
      case 'task_notification': {
        if (typeof message.tool_use_id !== 'string' || !this.subagents.has(message.tool_use_id)) return [];
        const status = message.status === 'completed' ? 'success' : 'error';
        return this.endSubagent(message.tool_use_id, status, String(message.summary ?? ''));
      }
      default:
        return [];
    }
  }

  private onResult(result: SDKResultMessage): UnsequencedEvent[] {
    this.sawResult = true;
    const events: UnsequencedEvent[] = [];
    if (this.held) events.push(this.events.metadata(this.held));

    const totalCost = result.total_cost_usd;
    const totalApi = result.duration_api_ms;
    // The CLI continues from the transcript's totals; if it did not (no cost-state), its totals start at zero.
    const costUsd = totalCost >= this.baseline.totalCostUsd ? totalCost - this.baseline.totalCostUsd : totalCost;
    const durationApiMs =
      totalApi >= this.baseline.totalApiDurationMs ? totalApi - this.baseline.totalApiDurationMs : totalApi;
    this.baseline = { totalCostUsd: totalCost, totalApiDurationMs: totalApi };

    const modelUsage = result.modelUsage ?? {};
    const model = this.model ?? Object.keys(modelUsage)[0];
    const entry: ModelUsage | undefined = (model ? modelUsage[model] : undefined) ?? Object.values(modelUsage)[0];
    const unknownPrice = Object.values(modelUsage).some((usage) => usage.costBasis === 'unknown');
    // Normally the result's usage minus what was reported is exactly the last request. An
    // interrupted request is missing from the result (zeros), so what was streamed of it counts.
    const usage = maxUsage(subtractUsage(usageOf(result.usage), this.reported), this.currentCall ?? zeroUsage());
    this.reported = zeroUsage();
    this.currentCall = undefined;

    this.held = {
      ...(isZero(usage) ? {} : { usage }),
      ...(unknownPrice ? { costUnknown: true } : { costUsd: Math.max(0, costUsd) }),
      ...(model ? { model } : {}),
      ...(entry?.contextWindow ? { contextWindow: entry.contextWindow } : {}),
      ...(entry?.maxOutputTokens ? { maxOutputTokens: entry.maxOutputTokens } : {}),
      numTurns: result.num_turns,
      durationMs: result.duration_ms,
      durationApiMs: Math.max(0, durationApiMs),
      nativeSessionId: result.session_id || this.options.nativeSessionId,
      ...(result.stop_reason ? { stopReason: result.stop_reason } : {}),
    };

    const failure = this.resultFailure(result);
    if (failure) {
      this.failed = true;
      events.push(...this.events.closeAll(), ...this.errorBlock(failure));
    }
    return events;
  }

  /** What an error result means, or undefined for success and for the result of an interrupt (an abort, not a failure). */
  private resultFailure(result: SDKResultMessage): BackendFailure | undefined {
    if (!result.is_error && result.subtype === 'success') return undefined;
    const terminal = (result as { terminal_reason?: string }).terminal_reason;
    if (terminal?.startsWith('aborted')) return undefined;
    const model = this.model ?? 'the model';
    const errors = 'errors' in result ? result.errors : [];
    const text = result.subtype === 'success' ? result.result : errors.join('\n');
    const status = (result as { api_error_status?: number | null }).api_error_status;
    const errorType = (result as { api_error_type?: string }).api_error_type;
    if (typeof status === 'number') {
      return failureFromStatus(status, errorType, {
        backend: CLAUDE_SDK_BACKEND_NAME,
        endpoint: this.options.endpoint,
        model,
        detail: text,
        keyHint: 'ANTHROPIC_API_KEY (or the Claude Code login)',
      });
    }
    if (/No conversation found with session ID/i.test(text)) {
      return {
        code: 'NATIVE_RESUME_FAILED',
        backend: CLAUDE_SDK_BACKEND_NAME,
        message: `Claude Code could not resume session ${this.options.nativeSessionId}: its transcript is not in the CLI's config folder.`,
        advice:
          'Restore the saved transcript (setupSessionTranscripts) and send again, or continue the session as a managed one from its imported transcript.',
        retryable: false,
        detail: text,
      };
    }
    if (result.subtype === 'error_max_turns') {
      return {
        code: 'MAX_TURNS',
        backend: CLAUDE_SDK_BACKEND_NAME,
        message: `The agent reached its limit of ${result.num_turns} model turns before finishing.`,
        advice: 'Send a message to let it continue, or raise maxTurns for this agent.',
        retryable: false,
      };
    }
    if (/prompt is too long/i.test(text)) {
      return {
        code: 'BAD_REQUEST',
        backend: CLAUDE_SDK_BACKEND_NAME,
        message: `The conversation no longer fits the context window of ${model}.`,
        advice: 'Compact the session (`/compact`) or start a new one, then send the message again.',
        retryable: false,
        detail: text,
      };
    }
    return {
      code: 'UNKNOWN',
      backend: CLAUDE_SDK_BACKEND_NAME,
      message: `Claude Code ended the turn with an error (${result.subtype}).`,
      advice: 'Read the detail below and send the message again.',
      retryable: false,
      ...(text ? { detail: text } : {}),
    };
  }

  private errorBlock(failure: BackendFailure): UnsequencedEvent[] {
    return this.events.system('error', describeFailure(failure), { data: { ...failure } });
  }

  private reportCall(call: Usage): UnsequencedEvent[] {
    this.reported = addUsage(this.reported, call);
    return [this.events.metadata({ usage: call, ...(this.model ? { model: this.model } : {}) })];
  }

  /** Requests streamed since the last result and not reported yet. */
  private unreported(): Usage {
    const usage = this.currentCall ?? zeroUsage();
    this.currentCall = undefined;
    return usage;
  }

  private newToolBlock(toolUseId: string, name: string, input: unknown): ToolUseBlock {
    return {
      type: 'tool_use',
      id: this.events.newId('tool'),
      createdAt: this.events.now(),
      toolUseId,
      name,
      input,
      status: 'pending',
    };
  }

  private startSubagent(
    toolUseId: string,
    toolName: string,
    input: unknown,
    conversationId: string,
  ): UnsequencedEvent[] {
    if (this.subagents.has(toolUseId)) return [];
    const fields = (typeof input === 'object' && input !== null ? input : {}) as Record<string, unknown>;
    const name = stringField(fields['subagent_type']) ?? stringField(fields['description']) ?? toolName;
    const prompt = stringField(fields['prompt']) ?? JSON.stringify(input ?? {});
    const at = this.events.now();
    const block: SubagentBlock = {
      type: 'subagent',
      id: this.events.newId('subagent'),
      createdAt: at,
      subagentId: toolUseId,
      name,
      input: prompt,
      status: 'running',
    };
    this.subagents.set(toolUseId, { block, conversationId, background: fields['run_in_background'] === true });
    return [
      { type: 'block_start', conversationId, at, block },
      ...this.events.system('subagent_start', `Subagent ${name} started`, { conversationId: toolUseId }),
      ...this.events.whole(
        { type: 'user_message', id: this.events.newId('user'), createdAt: at, content: prompt },
        toolUseId,
      ),
    ];
  }

  private endSubagent(toolUseId: string, status: 'success' | 'error', output: string): UnsequencedEvent[] {
    const subagent = this.subagents.get(toolUseId);
    if (!subagent) return [];
    this.subagents.delete(toolUseId);
    const at = this.events.now();
    const verb = status === 'success' ? 'completed' : 'failed';
    return [
      ...this.events.system('subagent_end', `Subagent ${subagent.block.name} ${verb}`, { conversationId: toolUseId }),
      {
        type: 'block_complete',
        conversationId: subagent.conversationId,
        at,
        block: { ...subagent.block, status, output, completedAt: at },
      },
    ];
  }
}

// The parts of the SDK's message shapes the mapper reads (the SDK's own types are far wider).
interface StreamEvent {
  type: string;
  index: number;
  message: { id: string; model?: string; usage?: WireUsage };
  content_block: { type: string; text?: string; thinking?: string; id?: string; name?: string };
  delta: { type?: string; text?: string; thinking?: string; partial_json?: string; stop_reason?: string | null };
  usage?: WireUsage;
}

interface AssistantMessage {
  id: string;
  model?: string;
  content?: Array<{ type: string; text?: string; thinking?: string; id?: string; name?: string; input?: unknown }>;
}

type UserContent = string | Array<{ type: string; tool_use_id?: string; content?: unknown; is_error?: boolean }>;

interface SystemMessage {
  type: 'system';
  subtype: string;
  model?: unknown;
  compact_metadata?: { trigger?: string; pre_tokens?: number; post_tokens?: number; duration_ms?: number };
  error_status?: unknown;
  error?: unknown;
  retry_delay_ms?: unknown;
  attempt?: unknown;
  max_retries?: unknown;
  tool_name?: unknown;
  tool_use_id?: unknown;
  message?: unknown;
  compact_result?: unknown;
  compact_error?: unknown;
  is_backgrounded?: unknown;
  status?: unknown;
  summary?: unknown;
}

interface WireUsage {
  input_tokens?: number | null;
  output_tokens?: number | null;
  cache_read_input_tokens?: number | null;
  cache_creation_input_tokens?: number | null;
}

function zeroUsage(): Usage {
  return { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
}

function isZero(usage: Usage): boolean {
  return (
    usage.inputTokens === 0 && usage.outputTokens === 0 && usage.cacheReadTokens === 0 && usage.cacheWriteTokens === 0
  );
}

function addWireUsage(usage: Usage, wire: WireUsage | undefined, final = false): void {
  if (!wire) return;
  if (typeof wire.input_tokens === 'number') usage.inputTokens = wire.input_tokens;
  if (typeof wire.cache_read_input_tokens === 'number') usage.cacheReadTokens = wire.cache_read_input_tokens;
  if (typeof wire.cache_creation_input_tokens === 'number') usage.cacheWriteTokens = wire.cache_creation_input_tokens;
  if (typeof wire.output_tokens === 'number' && (final || usage.outputTokens === 0))
    usage.outputTokens = wire.output_tokens;
}

function usageOf(wire: WireUsage | undefined): Usage {
  const usage = zeroUsage();
  addWireUsage(usage, wire, true);
  return usage;
}

function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheReadTokens: a.cacheReadTokens + b.cacheReadTokens,
    cacheWriteTokens: a.cacheWriteTokens + b.cacheWriteTokens,
  };
}

function subtractUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: Math.max(0, a.inputTokens - b.inputTokens),
    outputTokens: Math.max(0, a.outputTokens - b.outputTokens),
    cacheReadTokens: Math.max(0, a.cacheReadTokens - b.cacheReadTokens),
    cacheWriteTokens: Math.max(0, a.cacheWriteTokens - b.cacheWriteTokens),
  };
}

function maxUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: Math.max(a.inputTokens, b.inputTokens),
    outputTokens: Math.max(a.outputTokens, b.outputTokens),
    cacheReadTokens: Math.max(a.cacheReadTokens, b.cacheReadTokens),
    cacheWriteTokens: Math.max(a.cacheWriteTokens, b.cacheWriteTokens),
  };
}

function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .map((part: unknown) => {
      if (typeof part !== 'object' || part === null) return '';
      const item = part as { type?: string; text?: unknown };
      if (typeof item.text === 'string') return item.text;
      return item.type ? `[${item.type}]` : '';
    })
    .join('\n');
}

function parseJson(json: string): unknown {
  if (json.trim() === '') return {};
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return { _unparsedInput: json };
  }
}

function stringField(value: unknown): string | undefined {
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}
