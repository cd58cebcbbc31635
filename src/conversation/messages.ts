import * as z from 'zod';
import type { ConversationBlock } from './blocks.js';

/**
 * The message view of a conversation (ChatMessage): what `addMessage` takes and
 * `getRecentMessages` returns. Messages are stored as blocks; this is a projection of them.
 */
export const MessageRoleSchema = z.enum(['user', 'assistant']);
/** Who wrote a message: the user, the assistant or the system. */
export type MessageRole = z.infer<typeof MessageRoleSchema>;

/** The zod schema of a `NewMessage`. */
export const NewMessageSchema = z.object({
  role: MessageRoleSchema,
  content: z.string(),
  pinned: z.boolean().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
/** A message to add to a session: its role and text. */
export type NewMessage = z.infer<typeof NewMessageSchema>;

/** The zod schema of a `ChatMessage`. */
export const ChatMessageSchema = NewMessageSchema.extend({
  id: z.string().min(1),
  /** ISO 8601. */
  timestamp: z.string(),
  /** Position in the session's log. */
  seq: z.number().int().nonnegative(),
  tokens: z.number().int().nonnegative().optional(),
});
/** A stored message of a session, with its id and time. */
export type ChatMessage = z.infer<typeof ChatMessageSchema>;

/** The message a block stands for, or undefined for blocks that are not messages (tools, thinking, system). */
export function blockToMessage(block: ConversationBlock, seq: number): ChatMessage | undefined {
  if (block.type !== 'user_message' && block.type !== 'assistant_text') return undefined;
  const metadata = block.metadata;
  const tokens = typeof metadata?.['tokens'] === 'number' ? (metadata['tokens'] as number) : undefined;
  return {
    id: block.id,
    role: block.type === 'user_message' ? 'user' : 'assistant',
    content: block.content,
    timestamp: new Date(block.createdAt).toISOString(),
    seq,
    ...(block.type === 'user_message' && block.pinned ? { pinned: true } : {}),
    ...(metadata ? { metadata } : {}),
    ...(tokens !== undefined ? { tokens } : {}),
  };
}
