import * as z from 'zod';
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

/** The zod schema of a `BlockStartEvent`. */
export const BlockStartEventSchema = EventEnvelope.extend({
  type: z.literal('block_start'),
  block: ConversationBlockSchema,
});

/** The zod schema of a `TextDeltaEvent`. */
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

/** The zod schema of a `BlockCompleteEvent`. */
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
/** What a back end reports about a turn: usage, cost, model, duration and stop reason. */
export type TurnMetadata = z.infer<typeof TurnMetadataSchema>;

/** The zod schema of a `MetadataUpdateEvent`. */
export const MetadataUpdateEventSchema = EventEnvelope.extend({
  type: z.literal('metadata_update'),
  metadata: TurnMetadataSchema,
});

/** The zod schema of a `StreamEvent`: any event, by its `type`. */
export const StreamEventSchema = z.discriminatedUnion('type', [
  BlockStartEventSchema,
  TextDeltaEventSchema,
  BlockUpdateEventSchema,
  BlockCompleteEventSchema,
  MetadataUpdateEventSchema,
]);

/** A block begins: carries the block as it is at its start. */
export type BlockStartEvent = z.infer<typeof BlockStartEventSchema>;
/** More text for a streaming block: only what was added. */
export type TextDeltaEvent = z.infer<typeof TextDeltaEventSchema>;
/** Some fields of a block changed (a tool's status, its output so far). */
export type BlockUpdateEvent = z.infer<typeof BlockUpdateEventSchema>;
/** A block reached its final state; carries the whole block. */
export type BlockCompleteEvent = z.infer<typeof BlockCompleteEventSchema>;
/** A turn's metadata: usage, cost, model, stop reason, context window. */
export type MetadataUpdateEvent = z.infer<typeof MetadataUpdateEventSchema>;
/**
 * One live update of a conversation (block start, text delta, update, complete, metadata), addressed by session,
 * conversation and `seq`.
 */
export type StreamEvent = z.infer<typeof StreamEventSchema>;
/** The `type` tag of a stream event. */
export type StreamEventType = StreamEvent['type'];

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/**
 * An event before the store has numbered it. Back ends produce these; the session layer
 * stamps `sessionId` and `seq` when it appends them to the log.
 */
export type UnsequencedEvent = DistributiveOmit<StreamEvent, 'seq' | 'sessionId' | 'at'> & {
  at?: number;
};
