import {
  MAIN_CONVERSATION,
  type AssistantTextBlock,
  type ConversationBlock,
  type UnsequencedEvent,
  type SystemBlock,
  type SystemBlockSubtype,
  type ThinkingBlock,
  type ToolResultBlock,
  type ToolUseBlock,
  type TurnMetadata,
} from '../conversation/index.js';

/**
 * Builds the stream events of one turn so every back end emits the same shapes: a streamed block
 * is `block_start` (empty) → `text_delta`s → `block_complete` (whole), a one-shot block is
 * `block_start` → `block_complete`, and open blocks are closed before the turn ends (abort,
 * error), so partial output is kept.
 */
export interface TurnEventsOptions {
  /** Milliseconds since the epoch; injectable so tests are deterministic. */
  clock: () => number;
  /** A fresh, unique block id. */
  newId: (kind: string) => string;
}

type TextKind = 'assistant_text' | 'thinking';
type OpenText = (AssistantTextBlock | ThinkingBlock) & { conversationId: string };

/** Helps a back end build a turn's events: ids, `seq`-less events and block state, in the order the reducer expects. */
export class TurnEvents {
  private readonly open = new Map<string, OpenText>();

  constructor(private readonly options: TurnEventsOptions) {}

  now(): number {
    return this.options.clock();
  }

  newId(kind: string): string {
    return this.options.newId(kind);
  }

  /** Opens a streamed text or thinking block; returns its id and the `block_start` event. */
  startText(
    kind: TextKind,
    options: { conversationId?: string; model?: string; redacted?: boolean } = {},
  ): { blockId: string; events: UnsequencedEvent[] } {
    const conversationId = options.conversationId ?? MAIN_CONVERSATION;
    const at = this.now();
    const id = this.newId(kind === 'assistant_text' ? 'text' : 'thinking');
    const block: AssistantTextBlock | ThinkingBlock =
      kind === 'assistant_text'
        ? { type: 'assistant_text', id, createdAt: at, content: '', ...(options.model ? { model: options.model } : {}) }
        : { type: 'thinking', id, createdAt: at, content: '', ...(options.redacted ? { redacted: true } : {}) };
    this.open.set(id, { ...block, conversationId });
    return { blockId: id, events: [{ type: 'block_start', conversationId, at, block }] };
  }

  appendText(blockId: string, delta: string): UnsequencedEvent[] {
    const block = this.open.get(blockId);
    if (!block || delta === '') return [];
    block.content += delta;
    return [{ type: 'text_delta', conversationId: block.conversationId, at: this.now(), blockId, delta }];
  }

  completeText(blockId: string): UnsequencedEvent[] {
    const block = this.open.get(blockId);
    if (!block) return [];
    this.open.delete(blockId);
    const { conversationId, ...final } = block;
    const at = this.now();
    return [{ type: 'block_complete', conversationId, at, block: { ...final, completedAt: at } as ConversationBlock }];
  }

  isOpen(blockId: string): boolean {
    return this.open.has(blockId);
  }

  /** Closes every open streamed block as it stands (abort, error, end of stream). */
  closeAll(): UnsequencedEvent[] {
    return [...this.open.keys()].flatMap((id) => this.completeText(id));
  }

  /** A tool call as the model made it: `pending`, then `running` while it executes. */
  startToolUse(fields: { toolUseId?: string; name: string; input: unknown; conversationId?: string }): {
    block: ToolUseBlock;
    events: UnsequencedEvent[];
  } {
    const conversationId = fields.conversationId ?? MAIN_CONVERSATION;
    const at = this.now();
    const block: ToolUseBlock = {
      type: 'tool_use',
      id: this.newId('tool'),
      createdAt: at,
      toolUseId: fields.toolUseId ?? this.newId('call'),
      name: fields.name,
      input: fields.input,
      status: 'pending',
    };
    return {
      block,
      events: [
        { type: 'block_start', conversationId, at, block },
        { type: 'block_update', conversationId, at, blockId: block.id, updates: { status: 'running' } },
      ],
    };
  }

  /** Finishes a tool call and records its result as a `tool_result` block. */
  finishToolUse(
    block: ToolUseBlock,
    result: { content: string; isError?: boolean; output?: unknown },
    conversationId: string = MAIN_CONVERSATION,
  ): UnsequencedEvent[] {
    const at = this.now();
    const isError = result.isError ?? false;
    const finished: ToolUseBlock = {
      ...block,
      status: isError ? 'error' : 'success',
      completedAt: at,
      ...(isError ? { error: firstLine(result.content) } : {}),
    };
    const resultBlock: ToolResultBlock = {
      type: 'tool_result',
      id: this.newId('result'),
      createdAt: at,
      completedAt: at,
      toolUseId: block.toolUseId,
      content: result.content,
      isError,
      ...(result.output !== undefined ? { output: result.output } : {}),
    };
    return [
      { type: 'block_complete', conversationId, at, block: finished },
      { type: 'block_start', conversationId, at, block: resultBlock },
      { type: 'block_complete', conversationId, at, block: resultBlock },
    ];
  }

  /** Any complete block at once (`block_start` then `block_complete`). */
  whole(block: ConversationBlock, conversationId: string = MAIN_CONVERSATION): UnsequencedEvent[] {
    const at = block.completedAt ?? this.now();
    const final = { ...block, completedAt: at };
    return [
      { type: 'block_start', conversationId, at, block: final },
      { type: 'block_complete', conversationId, at, block: final },
    ];
  }

  system(
    subtype: SystemBlockSubtype,
    content: string,
    options: { data?: unknown; conversationId?: string } = {},
  ): UnsequencedEvent[] {
    const at = this.now();
    const block: SystemBlock = {
      type: 'system',
      id: this.newId('system'),
      createdAt: at,
      completedAt: at,
      subtype,
      content,
      ...(options.data !== undefined ? { data: options.data } : {}),
    };
    return this.whole(block, options.conversationId);
  }

  metadata(metadata: TurnMetadata, conversationId: string = MAIN_CONVERSATION): UnsequencedEvent {
    return { type: 'metadata_update', conversationId, at: this.now(), metadata };
  }
}

function firstLine(text: string): string {
  const line = text.split('\n', 1)[0] ?? '';
  return line.length > 200 ? `${line.slice(0, 197)}...` : line;
}

/** A counter-based id source: deterministic, unique within one back end instance. */
export function counterIds(prefix: string): (kind: string) => string {
  let next = 0;
  return (kind) => `${prefix}-${kind}-${++next}`;
}

/**
 * Splits text into streaming chunks at word boundaries (a word with its trailing space), so a
 * scripted or buffered reply still arrives as several `text_delta` events, like a real model's.
 */
export function chunkText(text: string, maxChunks = 8): string[] {
  const words = text.match(/\S+\s*|\s+/g) ?? [];
  if (words.length <= 1) return text === '' ? [] : [text];
  const perChunk = Math.max(1, Math.ceil(words.length / maxChunks));
  const chunks: string[] = [];
  for (let index = 0; index < words.length; index += perChunk)
    chunks.push(words.slice(index, index + perChunk).join(''));
  return chunks;
}
