import { z } from 'zod';

/**
 * A conversation is a list of blocks, not turns: each block is synced on its own,
 * so a long tool-heavy turn shows progress block by block.
 */

/** `pending → running → success | error`; only these transitions are legal (see `canTransition`). */
export const BlockStatusSchema = z.enum(['pending', 'running', 'success', 'error']);
export type BlockStatus = z.infer<typeof BlockStatusSchema>;

const allowedTransitions: Record<BlockStatus, readonly BlockStatus[]> = {
  pending: ['running', 'success', 'error'],
  running: ['success', 'error'],
  success: [],
  error: [],
};

/** True when a block may move from `from` to `to`. Staying in the same state is allowed (idempotent updates). */
export function canTransition(from: BlockStatus, to: BlockStatus): boolean {
  return from === to || allowedTransitions[from].includes(to);
}

/** Milliseconds since the epoch. */
const Timestamp = z.number().int().nonnegative();

const BlockBase = z.object({
  id: z.string().min(1),
  /** The `seq` of the event that introduced the block; `applyEvent` stamps it. */
  seq: z.number().int().nonnegative().optional(),
  createdAt: Timestamp,
  updatedAt: Timestamp.optional(),
  completedAt: Timestamp.optional(),
});

export const UserMessageBlockSchema = BlockBase.extend({
  type: z.literal('user_message'),
  content: z.string(),
  /** A pinned message's intent survives every compaction verbatim. */
  pinned: z.boolean().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export const AssistantTextBlockSchema = BlockBase.extend({
  type: z.literal('assistant_text'),
  content: z.string(),
  model: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

export const ThinkingBlockSchema = BlockBase.extend({
  type: z.literal('thinking'),
  content: z.string(),
  /** The back end hid the reasoning (a signature only, or redacted thinking). */
  redacted: z.boolean().optional(),
});

export const ToolUseBlockSchema = BlockBase.extend({
  type: z.literal('tool_use'),
  /** The back end's own id for the call; tool results point at it. */
  toolUseId: z.string().min(1),
  name: z.string(),
  input: z.unknown(),
  status: BlockStatusSchema,
  error: z.string().optional(),
});

export const ToolResultBlockSchema = BlockBase.extend({
  type: z.literal('tool_result'),
  toolUseId: z.string().min(1),
  /** Text shown to the model and the user; structured output is kept in `output`. */
  content: z.string(),
  output: z.unknown().optional(),
  isError: z.boolean().default(false),
});

export const SystemBlockSubtypeSchema = z.enum([
  'info',
  'error',
  'session_start',
  'compaction',
  'cleared',
  'interrupted',
  'aborted',
  'subagent_start',
  'subagent_end',
  'unknown_record',
]);
export type SystemBlockSubtype = z.infer<typeof SystemBlockSubtypeSchema>;

export const SystemBlockSchema = BlockBase.extend({
  type: z.literal('system'),
  subtype: SystemBlockSubtypeSchema,
  content: z.string(),
  /** Structured details (an error code, a compaction's token counts, an unknown record kept verbatim). */
  data: z.unknown().optional(),
});

export const UsageSchema = z.object({
  inputTokens: z.number().nonnegative().default(0),
  outputTokens: z.number().nonnegative().default(0),
  cacheReadTokens: z.number().nonnegative().default(0),
  cacheWriteTokens: z.number().nonnegative().default(0),
});
export type Usage = z.infer<typeof UsageSchema>;

export const SubagentBlockSchema = BlockBase.extend({
  type: z.literal('subagent'),
  /** The `conversationId` of the subagent's own thread. */
  subagentId: z.string().min(1),
  name: z.string(),
  input: z.string(),
  status: BlockStatusSchema,
  output: z.string().optional(),
  usage: UsageSchema.optional(),
  costUsd: z.number().nonnegative().optional(),
});

export const ConversationBlockSchema = z.discriminatedUnion('type', [
  UserMessageBlockSchema,
  AssistantTextBlockSchema,
  ThinkingBlockSchema,
  ToolUseBlockSchema,
  ToolResultBlockSchema,
  SystemBlockSchema,
  SubagentBlockSchema,
]);

export type UserMessageBlock = z.infer<typeof UserMessageBlockSchema>;
export type AssistantTextBlock = z.infer<typeof AssistantTextBlockSchema>;
export type ThinkingBlock = z.infer<typeof ThinkingBlockSchema>;
export type ToolUseBlock = z.infer<typeof ToolUseBlockSchema>;
export type ToolResultBlock = z.infer<typeof ToolResultBlockSchema>;
export type SystemBlock = z.infer<typeof SystemBlockSchema>;
export type SubagentBlock = z.infer<typeof SubagentBlockSchema>;
export type ConversationBlock = z.infer<typeof ConversationBlockSchema>;
export type BlockType = ConversationBlock['type'];

/** Blocks whose text grows through `text_delta` events. */
export type StreamableBlock = AssistantTextBlock | ThinkingBlock | ToolResultBlock;

export function isStreamable(block: ConversationBlock): block is StreamableBlock {
  return block.type === 'assistant_text' || block.type === 'thinking' || block.type === 'tool_result';
}

export function hasStatus(block: ConversationBlock): block is ToolUseBlock | SubagentBlock {
  return block.type === 'tool_use' || block.type === 'subagent';
}
