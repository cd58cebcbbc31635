import * as z from 'zod';
import { ConversationBlockSchema } from './blocks.js';

/**
 * The back end a session runs on. Open-ended so a new adapter
 * needs no change here; the built-in ones are listed in `KNOWN_ARCHITECTURES`.
 */
export const AgentArchitectureTypeSchema = z.string().min(1);
export type AgentArchitectureType = z.infer<typeof AgentArchitectureTypeSchema>;
export const KNOWN_ARCHITECTURES = [
  'scripted',
  'claude-sdk',
  'gemini-cli',
  'anthropic-api',
  'openai-compatible',
  'claude-code-import',
  'gemini-cli-import',
  'codex-import',
] as const;

export const SessionStatusSchema = z.enum(['active', 'archived']);
export type SessionStatus = z.infer<typeof SessionStatusSchema>;

/** Minimal data for listing sessions before loading them. */
export const SessionListDataSchema = z.object({
  sessionId: z.string().min(1),
  type: AgentArchitectureTypeSchema,
  agentProfileReference: z.string(),
  status: SessionStatusSchema,
  lastActivity: z.number().int().nonnegative().optional(),
  createdAt: z.number().int().nonnegative().optional(),
});
export type SessionListData = z.infer<typeof SessionListDataSchema>;

export const WorkspaceFileSchema = z.object({ path: z.string().min(1), content: z.string() });
export type WorkspaceFile = z.infer<typeof WorkspaceFileSchema>;

/** What is persisted. Raw transcripts keep every native detail; blocks are derived from them. */
export const SavedSessionDataSchema = SessionListDataSchema.extend({
  rawTranscript: z.string().optional(),
  subagents: z.array(z.object({ id: z.string().min(1), rawTranscript: z.string().optional() })).optional(),
  workspaceFiles: z.array(WorkspaceFileSchema),
});
export type SavedSessionData = z.infer<typeof SavedSessionDataSchema>;

/** The zod schema of `SessionMetrics`. */
export const SessionMetricsSchema = z.object({
  /** Completed user→agent turns in the main conversation. */
  turns: z.number().int().nonnegative(),
  inputTokens: z.number().nonnegative(),
  outputTokens: z.number().nonnegative(),
  cacheReadTokens: z.number().nonnegative(),
  cacheWriteTokens: z.number().nonnegative(),
  /** Sum of per-turn costs, workers included. */
  costUsd: z.number().nonnegative(),
  /** Some turn ran on a model with no known price: `costUsd` is a lower bound. */
  costUnknown: z.boolean(),
  /** Some of `costUsd` is Parley's estimate from the price table, not a cost the back end reported. */
  costEstimated: z.boolean().optional(),
  /** Occupancy of the last main request: input + cache read + cache write. */
  lastInputTokens: z.number().nonnegative(),
  lastOutputTokens: z.number().nonnegative(),
  contextWindow: z.number().int().positive().optional(),
  maxOutputTokens: z.number().int().positive().optional(),
  model: z.string().optional(),
  /** Parley's estimate of the last request, when it made one; compare with `lastInputTokens`. */
  lastEstimatedInputTokens: z.number().nonnegative().optional(),
});
/** A session's running totals: tokens, cost, turns and the context window's occupancy. */
export type SessionMetrics = z.infer<typeof SessionMetricsSchema>;

/** Metrics of a session that has run no turn yet. */
export function emptyMetrics(): SessionMetrics {
  return {
    turns: 0,
    inputTokens: 0,
    outputTokens: 0,
    cacheReadTokens: 0,
    cacheWriteTokens: 0,
    costUsd: 0,
    costUnknown: false,
    lastInputTokens: 0,
    lastOutputTokens: 0,
  };
}

/** Context occupancy of the last request in percent, or undefined when the window is unknown. */
export function contextPercent(metrics: SessionMetrics): number | undefined {
  if (!metrics.contextWindow) return undefined;
  return (metrics.lastInputTokens / metrics.contextWindow) * 100;
}

/** The zod schema of a `SubagentThread`. */
export const SubagentThreadSchema = z.object({
  id: z.string().min(1),
  rawTranscript: z.string().optional(),
  blocks: z.array(ConversationBlockSchema),
});
/** The conversation of one subagent or worker, kept beside the main one. */
export type SubagentThread = z.infer<typeof SubagentThreadSchema>;

/**
 * The state `applyEvent` folds events into: blocks of the main thread, one thread per subagent,
 * the metrics, and the last `seq` applied (events at or below it are already in).
 */
export const ConversationStateSchema = z.object({
  sessionId: z.string().min(1),
  lastSeq: z.number().int().min(-1),
  blocks: z.array(ConversationBlockSchema),
  subagents: z.array(SubagentThreadSchema),
  metrics: SessionMetricsSchema,
});
/** A conversation rebuilt from its events: its blocks, subagent threads, metrics and the last `seq` folded in. */
export type ConversationState = z.infer<typeof ConversationStateSchema>;

/** Saved data plus the parsed, architecture-agnostic blocks. */
export const RuntimeSessionDataSchema = SavedSessionDataSchema.extend({
  blocks: z.array(ConversationBlockSchema),
  subagents: z.array(SubagentThreadSchema),
  metrics: SessionMetricsSchema,
  lastSeq: z.number().int().min(-1),
});
export type RuntimeSessionData = z.infer<typeof RuntimeSessionDataSchema>;

/** The state of a session with no events yet: the reducer's starting point. */
export function emptyConversation(sessionId: string): ConversationState {
  return { sessionId, lastSeq: -1, blocks: [], subagents: [], metrics: emptyMetrics() };
}
