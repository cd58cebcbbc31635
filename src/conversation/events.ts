import { z } from 'zod';
import { ConversationBlockSchema, UsageSchema } from './blocks.js';

/** The main thread of a session; subagent threads use their subagent id. */
export const MAIN_CONVERSATION = 'main';

/**
 * Every event is addressable: `seq` only grows within a session, so a client that
 * reconnects asks for the events after the last `seq` it saw and misses nothing.
 */
const EventEnvelope = z.object({
  sessionId: z.string().min(1),
  conversationId: z.string().min(1),
  seq: z.number().int().nonnegative(),
  /** Milliseconds since the epoch, when the event was produced. */
  at: z.number().int().nonnegative(),
});

export const BlockStartEventSchema = EventEnvelope.extend({
  type: z.literal('block_start'),
  block: ConversationBlockSchema,
});

export const TextDeltaEventSchema = EventEnvelope.extend({
  type: z.literal('text_delta'),
  blockId: z.string().min(1),
  delta: z.string(),
});

/** Only what changed; `block_complete` carries the whole final block. */
export const BlockUpdateEventSchema = EventEnvelope.extend({
  type: z.literal('block_update'),
  blockId: z.string().min(1),
  updates: z.record(z.string(), z.unknown()),
});

export const BlockCompleteEventSchema = EventEnvelope.extend({
  type: z.literal('block_complete'),
  block: ConversationBlockSchema,
});

/**
 * Per-turn numbers reported by the back end. Costs and token counts are deltas for this turn,
 * never cumulative, so totals stay right across resume and restart; window sizes are absolute.
 */
export const TurnMetadataSchema = z.object({
  usage: UsageSchema.optional(),
  costUsd: z.number().nonnegative().optional(),
  /** The back end could not price this model: cost is unknown, not zero. */
  costUnknown: z.boolean().optional(),
  /** `costUsd` is Parley's estimate from the price table (the transcript recorded usage, not a cost). */
  costEstimated: z.boolean().optional(),
  model: z.string().optional(),
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  /** Agentic turns inside this query (the SDK's `num_turns`). */
  numTurns: z.number().int().nonnegative().optional(),
  durationMs: z.number().nonnegative().optional(),
  durationApiMs: z.number().nonnegative().optional(),
  /** The id the back end uses for this conversation (native continuity). */
  nativeSessionId: z.string().optional(),
  stopReason: z.string().optional(),
  /** Parley's own estimate of the request's input tokens, for calibration against `usage.inputTokens`. */
  estimatedInputTokens: z.number().nonnegative().optional(),
  /** True when this update closes a user→agent turn (counts towards `turns`). */
  turnComplete: z.boolean().optional(),
});
export type TurnMetadata = z.infer<typeof TurnMetadataSchema>;

export const MetadataUpdateEventSchema = EventEnvelope.extend({
  type: z.literal('metadata_update'),
  metadata: TurnMetadataSchema,
});

export const StreamEventSchema = z.discriminatedUnion('type', [
  BlockStartEventSchema,
  TextDeltaEventSchema,
  BlockUpdateEventSchema,
  BlockCompleteEventSchema,
  MetadataUpdateEventSchema,
]);

export type BlockStartEvent = z.infer<typeof BlockStartEventSchema>;
export type TextDeltaEvent = z.infer<typeof TextDeltaEventSchema>;
export type BlockUpdateEvent = z.infer<typeof BlockUpdateEventSchema>;
export type BlockCompleteEvent = z.infer<typeof BlockCompleteEventSchema>;
export type MetadataUpdateEvent = z.infer<typeof MetadataUpdateEventSchema>;
export type StreamEvent = z.infer<typeof StreamEventSchema>;
export type StreamEventType = StreamEvent['type'];

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * An event before the store has numbered it. Back ends produce these; the session layer
 * stamps `sessionId` and `seq` when it appends them to the log.
 */
export type StreamEventDraft = DistributiveOmit<StreamEvent, 'seq' | 'sessionId' | 'at'> & {
  at?: number;
};
