import type { SessionUpdate, StopReason, ToolCallUpdate } from '@agentclientprotocol/sdk';
import {
  contextPercent,
  MAIN_CONVERSATION,
  type ConversationBlock,
  type ConversationState,
  type SessionMetrics,
  type StreamEvent,
  type SubagentBlock,
  type SystemBlock,
  type ToolUseBlock,
} from '../conversation/index.js';
import {
  planOf,
  subagentCallOf,
  subagentEndOf,
  toolCallOf,
  toolFailureUpdateOf,
  toolResultUpdateOf,
} from './tool-calls.js';

/**
 * Parley's stream events as ACP `session/update`s, in one place: text →
 * `agent_message_chunk`, thinking → `agent_thought_chunk`, a tool use → `tool_call` then
 * `tool_call_update`, a worker → a tool call whose content streams its answer, a compaction or an
 * error → a message (a compaction as `compaction_update` when the client advertised
 * `session.compaction`), a to-do tool's list → a `plan`. `LiveUpdates` follows a session's events as they are stored; `replayUpdates`
 * turns a whole stored conversation into the updates `session/load` replays. Both are pure.
 */

interface OpenBlock {
  type: ConversationBlock['type'];
  conversationId: string;
  /** Text already sent through deltas (a back end that does not stream sends it whole at the end). */
  streamed: boolean;
}

interface Worker {
  block: SubagentBlock;
  answer: string;
}

/** Updates the client said at initialize it understands, beyond the baseline. */
export interface ClientUpdates {
  /** `compaction_update` (the client's `session.compaction` capability); else a compaction is a message. */
  compaction?: boolean;
}

export class LiveUpdates {
  /** `root`: the session's folder, against which relative paths in tool calls are made absolute. */
  constructor(
    private readonly root?: string,
    private readonly client: ClientUpdates = {},
  ) {}

  private readonly blocks = new Map<string, OpenBlock>();
  private readonly toolUses = new Map<string, ToolUseBlock>();
  private readonly announced = new Set<string>();
  /**
   * Tool uses that ended in error, waiting for their result (which says why); those still without
   * one when the turn ends are closed as failed then.
   */
  private readonly failedWithoutResult = new Map<string, ToolUseBlock>();
  /** Workers by the id of their thread (`conversationId` of their events). */
  private readonly workers = new Map<string, Worker>();

  /** The updates one stored event becomes; most events become one or none. */
  map(event: StreamEvent): SessionUpdate[] {
    const inMain = event.conversationId === MAIN_CONVERSATION;
    if (!inMain) return this.mapWorkerEvent(event);
    switch (event.type) {
      case 'block_start':
        this.blocks.set(event.block.id, {
          type: event.block.type,
          conversationId: event.conversationId,
          streamed: false,
        });
        return this.started(event.block);
      case 'text_delta': {
        const open = this.blocks.get(event.blockId);
        if (!open || event.delta === '') return [];
        open.streamed = true;
        if (open.type === 'assistant_text')
          return [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: event.delta } }];
        if (open.type === 'thinking')
          return [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: event.delta } }];
        return [];
      }
      case 'block_update': {
        const open = this.blocks.get(event.blockId);
        if (event.updates['status'] === 'running' && (open?.type === 'tool_use' || open?.type === 'subagent')) {
          const toolCallId = open.type === 'tool_use' ? this.toolUseIdOfBlock(event.blockId) : event.blockId;
          if (toolCallId !== undefined)
            return [{ sessionUpdate: 'tool_call_update', toolCallId, status: 'in_progress' }];
        }
        return [];
      }
      case 'block_complete': {
        const open = this.blocks.get(event.block.id);
        this.blocks.delete(event.block.id);
        return this.completed(event.block, open?.streamed ?? false);
      }
      case 'metadata_update': {
        if (!event.metadata.turnComplete) return [];
        const failures = [...this.failedWithoutResult.values()].map((toolUse): SessionUpdate => ({
          sessionUpdate: 'tool_call_update',
          ...toolFailureUpdateOf(toolUse),
        }));
        this.failedWithoutResult.clear();
        return failures;
      }
    }
  }

  /**
   * The `tool_call` (pending) that a permission request about `toolCall` must follow, unless the
   * editor was told of that call already; its tool use, when it is stored later, then updates it.
   */
  announce(toolCall: ToolCallUpdate): SessionUpdate[] {
    if (this.announced.has(toolCall.toolCallId)) return [];
    this.announced.add(toolCall.toolCallId);
    const { toolCallId, title, kind, rawInput, content, locations } = toolCall;
    return [
      {
        sessionUpdate: 'tool_call',
        toolCallId,
        title: title ?? 'Tool call',
        status: 'pending',
        ...(kind ? { kind } : {}),
        ...(rawInput !== undefined ? { rawInput } : {}),
        ...(content ? { content } : {}),
        ...(locations ? { locations } : {}),
      },
    ];
  }

  private started(block: ConversationBlock): SessionUpdate[] {
    if (block.type === 'tool_use') {
      this.toolUses.set(block.toolUseId, block);
      const call = toolCallOf(block, this.root);
      if (this.announced.has(block.toolUseId)) return [{ ...call, sessionUpdate: 'tool_call_update' }];
      this.announced.add(block.toolUseId);
      return [{ sessionUpdate: 'tool_call', ...call }];
    }
    if (block.type === 'subagent') {
      this.workers.set(block.subagentId, { block, answer: '' });
      return [{ sessionUpdate: 'tool_call', ...subagentCallOf(block) }];
    }
    return [];
  }

  private completed(block: ConversationBlock, streamed: boolean): SessionUpdate[] {
    switch (block.type) {
      case 'user_message':
        return [];
      case 'assistant_text':
        return streamed || block.content === ''
          ? []
          : [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: block.content } }];
      case 'thinking':
        return streamed || block.content === '' || block.redacted
          ? []
          : [{ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: block.content } }];
      case 'tool_use': {
        const updates: SessionUpdate[] = [];
        if (!this.announced.has(block.toolUseId)) {
          this.announced.add(block.toolUseId);
          updates.push({ sessionUpdate: 'tool_call', ...toolCallOf(block, this.root) });
        }
        this.toolUses.set(block.toolUseId, block);
        if (block.status === 'error') this.failedWithoutResult.set(block.toolUseId, block);
        updates.push(...planUpdatesOf(block));
        return updates;
      }
      case 'tool_result':
        this.failedWithoutResult.delete(block.toolUseId);
        return [
          {
            sessionUpdate: 'tool_call_update',
            ...toolResultUpdateOf(this.toolUses.get(block.toolUseId), block, this.root),
          },
        ];
      case 'subagent': {
        const worker = this.workers.get(block.subagentId);
        const updates: SessionUpdate[] = worker ? [] : [{ sessionUpdate: 'tool_call', ...subagentCallOf(block) }];
        if (block.status === 'success' || block.status === 'error') {
          updates.push({ sessionUpdate: 'tool_call_update', ...subagentEndOf(block, worker?.answer ?? '') });
          this.workers.delete(block.subagentId);
        } else {
          this.workers.set(block.subagentId, { block, answer: worker?.answer ?? '' });
        }
        return updates;
      }
      case 'system':
        return systemUpdatesOf(block, this.client);
    }
  }

  /** A worker's thread: its answer streams into its tool call's content. */
  private mapWorkerEvent(event: StreamEvent): SessionUpdate[] {
    const worker = this.workers.get(event.conversationId);
    if (!worker) return [];
    if (event.type === 'block_start') {
      this.blocks.set(event.block.id, {
        type: event.block.type,
        conversationId: event.conversationId,
        streamed: false,
      });
      return [];
    }
    let added = '';
    if (event.type === 'text_delta') {
      const open = this.blocks.get(event.blockId);
      if (open?.type !== 'assistant_text') return [];
      open.streamed = true;
      added = event.delta;
    } else if (event.type === 'block_complete') {
      const open = this.blocks.get(event.block.id);
      this.blocks.delete(event.block.id);
      if (event.block.type !== 'assistant_text' || open?.streamed) return [];
      added = event.block.content;
    }
    if (added === '') return [];
    // A new answer block after earlier ones starts on its own paragraph.
    worker.answer =
      worker.answer === '' || event.type === 'text_delta' ? worker.answer + added : `${worker.answer}\n\n${added}`;
    return [
      {
        sessionUpdate: 'tool_call_update',
        toolCallId: worker.block.id,
        status: 'in_progress',
        content: [{ type: 'content', content: { type: 'text', text: worker.answer } }],
      },
    ];
  }

  private toolUseIdOfBlock(blockId: string): string | undefined {
    for (const toolUse of this.toolUses.values()) if (toolUse.id === blockId) return toolUse.toolUseId;
    return undefined;
  }
}

/**
 * The updates that replay a stored conversation for `session/load`: the user's messages as
 * `user_message_chunk`, the agent's as `agent_message_chunk`, tools and workers as finished tool
 * calls, compactions and errors as messages, then the session's usage.
 */
export function replayUpdates(
  conversation: ConversationState,
  root?: string,
  client: ClientUpdates = {},
): SessionUpdate[] {
  const updates: SessionUpdate[] = [];
  const results = new Map(
    conversation.blocks.flatMap((block) => (block.type === 'tool_result' ? [[block.toolUseId, block] as const] : [])),
  );
  const threads = new Map(conversation.subagents.map((thread) => [thread.id, thread]));
  for (const block of conversation.blocks) {
    switch (block.type) {
      case 'user_message':
        if (block.content !== '')
          updates.push({ sessionUpdate: 'user_message_chunk', content: { type: 'text', text: block.content } });
        break;
      case 'assistant_text':
        if (block.content !== '')
          updates.push({ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text: block.content } });
        break;
      case 'thinking':
        if (block.content !== '' && !block.redacted)
          updates.push({ sessionUpdate: 'agent_thought_chunk', content: { type: 'text', text: block.content } });
        break;
      case 'tool_use': {
        updates.push({ sessionUpdate: 'tool_call', ...toolCallOf(block, root) });
        const result = results.get(block.toolUseId);
        if (result) updates.push({ sessionUpdate: 'tool_call_update', ...toolResultUpdateOf(block, result, root) });
        else if (block.status === 'error')
          updates.push({ sessionUpdate: 'tool_call_update', ...toolFailureUpdateOf(block) });
        updates.push(...planUpdatesOf(block));
        break;
      }
      case 'tool_result':
        break;
      case 'subagent': {
        updates.push({ sessionUpdate: 'tool_call', ...subagentCallOf(block) });
        const answer = (threads.get(block.subagentId)?.blocks ?? [])
          .flatMap((entry) => (entry.type === 'assistant_text' && entry.content !== '' ? [entry.content] : []))
          .join('\n\n');
        if (block.status === 'success' || block.status === 'error')
          updates.push({ sessionUpdate: 'tool_call_update', ...subagentEndOf(block, answer) });
        break;
      }
      case 'system':
        updates.push(...systemUpdatesOf(block, client));
        break;
    }
  }
  const usage = usageUpdateOf(conversation.metrics);
  if (usage) updates.push(usage);
  return updates;
}

/** A to-do tool's list as ACP's plan (the whole list, which replaces the client's). */
function planUpdatesOf(toolUse: ToolUseBlock): SessionUpdate[] {
  const entries = planOf(toolUse);
  return entries === undefined ? [] : [{ sessionUpdate: 'plan', entries }];
}

/**
 * A system block for the client: a compaction as a finished `compaction_update` where the client
 * takes those (its id the block's, its summary what Parley says of it, Parley's numbers under
 * `_meta.parley`), anything else a person should read as a message.
 */
function systemUpdatesOf(block: SystemBlock, client: ClientUpdates): SessionUpdate[] {
  if (block.subtype === 'compaction' && client.compaction)
    return [
      {
        sessionUpdate: 'compaction_update',
        compactionId: block.id,
        status: 'completed',
        summary: [{ type: 'text', text: block.content }],
        ...(block.data !== undefined ? { _meta: { parley: block.data } } : {}),
      },
    ];
  const text = systemMessageOf(block);
  return text === undefined ? [] : [{ sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } }];
}

/** What a person should read of a system block, as a message; undefined for bookkeeping blocks. */
export function systemMessageOf(block: SystemBlock): string | undefined {
  switch (block.subtype) {
    case 'compaction':
      return `\n\n*Context compacted: ${block.content}*\n\n`;
    case 'error':
      return `\n\n**Error:** ${block.content}\n\n`;
    case 'interrupted':
    case 'aborted':
    case 'cleared':
    case 'info':
      return `\n\n*${block.content}*\n\n`;
    default:
      return undefined;
  }
}

/**
 * ACP's usage update: context occupancy of the last request over the window, and the session's
 * cost so far. None while the window is unknown (ACP requires both numbers).
 */
export function usageUpdateOf(metrics: SessionMetrics): SessionUpdate | undefined {
  if (!metrics.contextWindow) return undefined;
  return {
    sessionUpdate: 'usage_update',
    used: metrics.lastInputTokens,
    size: metrics.contextWindow,
    ...(metrics.costUsd > 0 || !metrics.costUnknown ? { cost: { amount: metrics.costUsd, currency: 'USD' } } : {}),
  };
}

/**
 * Session information for clients that show it: the title and last activity, and Parley's context
 * % and cost under `_meta.parley` (ACP has no standard field for them beside the usage update).
 */
export function sessionInfoUpdateOf(options: {
  title?: string;
  updatedAt: number;
  metrics: SessionMetrics;
}): SessionUpdate {
  const percent = contextPercent(options.metrics);
  return {
    sessionUpdate: 'session_info_update',
    ...(options.title ? { title: options.title } : {}),
    updatedAt: new Date(options.updatedAt).toISOString(),
    _meta: {
      parley: {
        turns: options.metrics.turns,
        costUsd: options.metrics.costUsd,
        ...(options.metrics.costUnknown ? { costUnknown: true } : {}),
        ...(percent !== undefined ? { contextPercent: Math.round(percent * 10) / 10 } : {}),
        ...(options.metrics.model ? { model: options.metrics.model } : {}),
      },
    },
  };
}

/** Parley's stop reasons (the back ends' own words, passed through) as ACP's. */
export function stopReasonOf(parleyStopReason: string | undefined, cancelled: boolean): StopReason {
  if (cancelled) return 'cancelled';
  switch (parleyStopReason) {
    case 'aborted':
    case 'cancelled':
    case 'interrupted':
      return 'cancelled';
    case 'max_tokens':
    case 'length':
    case 'MAX_TOKENS':
      return 'max_tokens';
    case 'max_turns':
    case 'error_max_turns':
    case 'max_turn_requests':
      return 'max_turn_requests';
    case 'refusal':
    case 'content_filter':
    case 'SAFETY':
      return 'refusal';
    default:
      return 'end_turn';
  }
}
