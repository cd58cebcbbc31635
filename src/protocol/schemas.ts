import { z } from 'zod';
import { SessionMetricsSchema } from '../conversation/index.js';

/**
 * The wire shapes of the things methods return. The protocol depends only on `conversation/`, so
 * the records other layers keep (session records, checkpoints) are restated here as what crosses
 * the wire; the server pins each to its source type with a compile-time check.
 */

/** Ids and slugs: letters, digits, `.`, `_`, `-`; not starting with `.` or `-`; no `..`; 1–200 characters. No path can leave the data folder. */
export const WIRE_ID_PATTERN = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;
export const WireIdSchema = z
  .string()
  .regex(WIRE_ID_PATTERN, 'must be 1–200 letters, digits, ".", "_" or "-", not starting with "." or "-"')
  .refine((value) => !value.includes('..'), 'must not contain ".."');

export const SessionIdParamSchema = WireIdSchema.describe('A session id (see `list_sessions`).');
export const ChannelIdSchema = WireIdSchema.describe('A channel: the `channel` query parameter of the WebSocket URL.');

const Millis = z.number().int().nonnegative();

export const SessionScopeWireSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('feature'), featureId: z.string() }),
  z.object({ kind: z.literal('task'), featureId: z.string(), taskId: z.string(), taskState: z.string() }),
  z.object({
    kind: z.literal('draft'),
    role: z.string(),
    project: z.string().optional(),
    taskSlug: z.string().optional(),
    channelId: z.string().optional(),
  }),
  z.object({ kind: z.literal('workflow'), harness: z.string(), agent: z.string() }),
  z.object({ kind: z.literal('imported'), source: z.string(), path: z.string(), nativeSessionId: z.string().optional() }),
]);

/** A session's metadata (the store's `session.json`). */
export const SessionInfoSchema = z.object({
  sessionId: z.string(),
  /** The back end (seed 004's architecture type). */
  type: z.string(),
  agentProfileReference: z.string(),
  agentType: z.string(),
  status: z.enum(['active', 'archived']),
  scope: SessionScopeWireSchema,
  title: z.string().optional(),
  readOnly: z.boolean().optional(),
  createdAt: Millis,
  updatedAt: Millis,
  lastActivity: Millis.optional(),
  native: z.object({ backend: z.string(), nativeSessionId: z.string(), transcriptPath: z.string().optional() }).optional(),
  settings: z.object({
    tokenBudget: z.number().optional(),
    compactionThreshold: z.number().optional(),
    tailTokens: z.number().optional(),
    contextSessions: z.array(z.string()).optional(),
  }),
  stats: z.object({
    totalMessages: z.number().int().nonnegative(),
    totalTokens: z.number().int().nonnegative(),
    totalCompactions: z.number().int().nonnegative(),
    lastCompactionAt: z.string().optional(),
  }),
  metrics: SessionMetricsSchema.optional(),
  clearedThroughSeq: z.number().int().optional(),
});
export type SessionInfo = z.infer<typeof SessionInfoSchema>;

/** One compaction's result (the store's `checkpoints/v{n}.json`). Every version is kept. */
export const CheckpointWireSchema = z.object({
  sessionId: z.string(),
  version: z.number().int().positive(),
  createdAt: z.string(),
  trigger: z.enum(['auto', 'manual', 'native', 'import', 'update']),
  instructions: z.string().optional(),
  summary: z.object({
    completed: z.array(z.string()),
    inProgress: z.array(z.string()),
    pending: z.array(z.string()),
    decisions: z.array(z.string()),
    blockers: z.array(z.string()),
  }),
  pinned: z.array(z.string()),
  liveHandles: z.array(z.object({ id: z.string(), kind: z.string(), label: z.string().optional(), status: z.string() })),
  ralphLoop: z
    .object({
      currentIteration: z.number().int().nonnegative(),
      passedChecks: z.array(z.string()),
      failedChecks: z.array(z.string()),
      lastError: z.string().optional(),
    })
    .optional(),
  covers: z.object({
    throughSeq: z.number().int(),
    fromSeq: z.number().int().optional(),
    messageCount: z.number().int().nonnegative(),
    oldestMessageTimestamp: z.string().optional(),
    newestMessageTimestamp: z.string().optional(),
  }),
  tokens: z.object({ checkpoint: z.number(), lastCompactionInput: z.number(), totalSaved: z.number() }),
});
export type CheckpointWire = z.infer<typeof CheckpointWireSchema>;

export const ProjectInfoSchema = z.looseObject({
  name: z.string(),
  /** The project folder. */
  path: z.string(),
  description: z.string().optional(),
});
export type ProjectInfo = z.infer<typeof ProjectInfoSchema>;

export const TaskInfoSchema = z.looseObject({
  slug: z.string(),
  title: z.string(),
  description: z.string().optional(),
  state: z.string().optional(),
  project: z.string().optional(),
});
export type TaskInfo = z.infer<typeof TaskInfoSchema>;

export const RoleInfoSchema = z.looseObject({
  name: z.string(),
  description: z.string().optional(),
  permissions: z.array(z.string()),
  /** `builtin` or the role file it was read from. */
  source: z.string().optional(),
});
export type RoleInfo = z.infer<typeof RoleInfoSchema>;

/** A role file that could not be read: names the file and the field. */
export const RoleFileErrorSchema = z.looseObject({
  file: z.string(),
  field: z.string().optional(),
  message: z.string(),
});
export type RoleFileError = z.infer<typeof RoleFileErrorSchema>;

/** Seed 000's DraftSession, as `get_draft_status` returns it (dates as ISO 8601 strings). */
export const DraftStatusSchema = z.looseObject({
  sessionId: z.string(),
  role: z.string(),
  taskSlug: z.string(),
  taskDir: z.string().optional(),
  channelId: z.string().optional(),
  project: z.string().optional(),
  startedAt: z.string().optional(),
  lastActivityAt: z.string().optional(),
  turnCount: z.number().int().nonnegative(),
  status: z.enum(['active', 'closed']).optional(),
  cumulativeCostUsd: z.number().nonnegative().optional(),
  lastInputTokens: z.number().nonnegative().optional(),
  lastOutputTokens: z.number().nonnegative().optional(),
  contextWindow: z.number().nonnegative().optional(),
  maxOutputTokens: z.number().nonnegative().optional(),
  /** `lastInputTokens / contextWindow * 100`, null when the window is unknown. */
  contextPct: z.number().nullable().optional(),
});
export type DraftStatus = z.infer<typeof DraftStatusSchema>;

export const AgentStatusValueSchema = z.string().describe('queued | running | completed | failed | killed');

/** A worker agent in the pool (drafted by a drafted agent through `draft_agent`). */
export const AgentInfoSchema = z.looseObject({
  agentId: z.string(),
  role: z.string(),
  status: AgentStatusValueSchema,
  channelId: z.string().optional(),
  sessionId: z.string().optional(),
  taskSlug: z.string().optional(),
  costUsd: z.number().optional(),
});
export type AgentInfo = z.infer<typeof AgentInfoSchema>;

/** The structured result of the autonomous dispatch path (seed 000's DispatchResult). */
export const DispatchResultSchema = z.looseObject({
  status: z.string(),
  sessionId: z.string().optional(),
  role: z.string().optional(),
  summary: z.string().optional(),
  output: z.unknown().optional(),
  costUsd: z.number().optional(),
  durationMs: z.number().optional(),
});
export type DispatchResult = z.infer<typeof DispatchResultSchema>;

