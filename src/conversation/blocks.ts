import * as z from 'zod';

/**
 * A conversation is a list of blocks, not turns: each block is synced on its own,
 * so a long tool-heavy turn shows progress block by block.
 */

/** `pending → running → success | error`; only these transitions are legal (see `canTransition`). */
export const BlockStatusSchema = z.enum(['pending', 'running', 'success', 'error']);
/** Where a block is in its life: `pending`, `running`, then `success` or `error`. */
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

/** The zod schema of a `UserMessageBlock`. */
export const UserMessageBlockSchema = BlockBase.extend({
  type: z.literal('user_message'),
  content: z.string(),
  /** A pinned message's intent survives every compaction verbatim. */
  pinned: z.boolean().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/** The zod schema of an `AssistantTextBlock`. */
export const AssistantTextBlockSchema = BlockBase.extend({
  type: z.literal('assistant_text'),
  content: z.string(),
  model: z.string().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});

/** The zod schema of a `ThinkingBlock`. */
export const ThinkingBlockSchema = BlockBase.extend({
  type: z.literal('thinking'),
  content: z.string(),
  /** The back end hid the reasoning (a signature only, or redacted thinking). */
  redacted: z.boolean().optional(),
});

/** The zod schema of a `ToolUseBlock`. */
export const ToolUseBlockSchema = BlockBase.extend({
  type: z.literal('tool_use'),
  /** The back end's own id for the call; tool results point at it. */
  toolUseId: z.string().min(1),
  name: z.string(),
  input: z.unknown(),
  status: BlockStatusSchema,
  error: z.string().optional(),
});

/** The zod schema of a `ToolResultBlock`. */
export const ToolResultBlockSchema = BlockBase.extend({
  type: z.literal('tool_result'),
  toolUseId: z.string().min(1),
  /** Text shown to the model and the user; structured output is kept in `output`. */
  content: z.string(),
  output: z.unknown().optional(),
  isError: z.boolean().default(false),
});

/** The zod schema of a `SystemBlockSubtype`. */
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
/** What a `SystemBlock` reports: compaction, interruption, an error, a back-end move, and so on. */
export type SystemBlockSubtype = z.infer<typeof SystemBlockSubtypeSchema>;

/** The zod schema of a `SystemBlock`. */
export const SystemBlockSchema = BlockBase.extend({
  type: z.literal('system'),
  subtype: SystemBlockSubtypeSchema,
  content: z.string(),
  /** Structured details (an error code, a compaction's token counts, an unknown record kept verbatim). */
  data: z.unknown().optional(),
});

/** The zod schema of `Usage`. */
export const UsageSchema = z.object({
  inputTokens: z.number().nonnegative().default(0),
  outputTokens: z.number().nonnegative().default(0),
  cacheReadTokens: z.number().nonnegative().default(0),
  cacheWriteTokens: z.number().nonnegative().default(0),
});
/** Token usage of a model call: input, output, cache read and cache write. */
export type Usage = z.infer<typeof UsageSchema>;

/** The zod schema of a `SubagentBlock`. */
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

/** The zod schema of a `ConversationBlock`: any block, by its `type`. */
export const ConversationBlockSchema = z.discriminatedUnion('type', [
  UserMessageBlockSchema,
  AssistantTextBlockSchema,
  ThinkingBlockSchema,
  ToolUseBlockSchema,
  ToolResultBlockSchema,
  SystemBlockSchema,
  SubagentBlockSchema,
]);

/** What the user said in one message. */
export type UserMessageBlock = z.infer<typeof UserMessageBlockSchema>;
/** Text the model wrote, streamed by `text_delta` events while it runs. */
export type AssistantTextBlock = z.infer<typeof AssistantTextBlockSchema>;
/** The model's visible reasoning, when the back end reports it. */
export type ThinkingBlock = z.infer<typeof ThinkingBlockSchema>;
/** A tool call the agent made, with its input and its state (pending, running, success, error). */
export type ToolUseBlock = z.infer<typeof ToolUseBlockSchema>;
/** The output of a tool call, tied to its `tool_use` block by the tool use id. */
export type ToolResultBlock = z.infer<typeof ToolResultBlockSchema>;
/** A notice from Parley or the back end (compaction, interruption, errors, a back-end move), by `subtype`. */
export type SystemBlock = z.infer<typeof SystemBlockSchema>;
/** A subagent or worker the agent started, with its own conversation id. */
export type SubagentBlock = z.infer<typeof SubagentBlockSchema>;
/** One block of a conversation, tagged by `type`: the unit the UIs draw and the store keeps. */
export type ConversationBlock = z.infer<typeof ConversationBlockSchema>;
/** The `type` tag of a block. */
export type BlockType = ConversationBlock['type'];

/** Blocks whose text grows through `text_delta` events. */
export type StreamableBlock = AssistantTextBlock | ThinkingBlock | ToolResultBlock;

/** Whether a block's text arrives in `text_delta` events (assistant text and thinking). */
export function isStreamable(block: ConversationBlock): block is StreamableBlock {
  return block.type === 'assistant_text' || block.type === 'thinking' || block.type === 'tool_result';
}

export function hasStatus(block: ConversationBlock): block is ToolUseBlock | SubagentBlock {
  return block.type === 'tool_use' || block.type === 'subagent';
}
