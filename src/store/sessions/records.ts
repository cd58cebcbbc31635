import * as z from 'zod';
import { SessionListDataSchema, SessionMetricsSchema } from '../../conversation/index.js';
import { FORMAT_VERSION, IdSchema } from '../record-format.js';

/** The records a SessionStore persists (see session-store.ts), each file with its `formatVersion`. */
const FormatVersion = z.literal(FORMAT_VERSION);

export const AGENT_TYPES = ['pm', 'dev', 'qa', 'harness', 'merge'] as const;
export const AgentTypeSchema = z.enum(AGENT_TYPES);
/** The built-in agent types of seed 003's scoped sessions: `pm`, `dev`, `qa`, `harness`, `merge`. */
export type AgentType = z.infer<typeof AgentTypeSchema>;

/** Where a session belongs: seed 003's feature and task sessions, drafts, workflow agents, imports. */
export const SessionScopeSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('feature'), featureId: IdSchema }),
  z.object({ kind: z.literal('task'), featureId: IdSchema, taskId: IdSchema, taskState: IdSchema }),
  z.object({
    kind: z.literal('draft'),
    role: z.string(),
    project: z.string().optional(),
    taskSlug: z.string().optional(),
    channelId: z.string().optional(),
    /** A conversation between agents: the session of the agent that opened it. */
    parentSessionId: z.string().optional(),
  }),
  z.object({ kind: z.literal('workflow'), harness: z.string(), agent: z.string() }),
  z.object({
    kind: z.literal('imported'),
    source: z.enum(['claude-code', 'gemini-cli', 'seed-layout', 'codex']),
    path: z.string(),
    nativeSessionId: z.string().optional(),
  }),
]);
/** Where a session belongs (a feature, a task, a draft, a workflow agent, an import). */
export type SessionScope = z.infer<typeof SessionScopeSchema>;
/** The `kind` tag of a session's scope. */
export type SessionScopeKind = SessionScope['kind'];

/** The zod schema of `SessionSettings`. */
export const SessionSettingsSchema = z.object({
  /** Largest request, in tokens (default 100,000). */
  tokenBudget: z.number().int().positive().optional(),
  /** Fraction of the budget at which compaction starts (default 0.9). */
  compactionThreshold: z.number().gt(0).lte(1).optional(),
  /** Tokens of the most recent messages kept verbatim by a compaction. */
  tailTokens: z.number().int().nonnegative().optional(),
  /** Other sessions whose checkpoints join this session's context, read only (QA reading Dev's). */
  contextSessions: z.array(IdSchema).optional(),
});
/** A session's own settings: token budget, compaction threshold, verbatim tail, and sessions whose checkpoints it reads. */
export type SessionSettings = z.infer<typeof SessionSettingsSchema>;

export const SessionStatsSchema = z.object({
  totalMessages: z.number().int().nonnegative(),
  totalTokens: z.number().int().nonnegative(),
  totalCompactions: z.number().int().nonnegative(),
  /** ISO 8601. */
  lastCompactionAt: z.string().optional(),
});
/** A session's stored totals: messages, tokens and compactions. */
export type SessionStats = z.infer<typeof SessionStatsSchema>;

/** A back end's own handle on the conversation, for native continuity (Claude SDK session id, Gemini `--resume`). */
export const NativeSessionRefSchema = z.object({
  backend: z.string(),
  nativeSessionId: z.string(),
  /** Where the raw native transcript was read from or is kept. */
  transcriptPath: z.string().optional(),
});
/** The back end's own session a Parley session maps to: its native id and transcript. */
export type NativeSessionRef = z.infer<typeof NativeSessionRefSchema>;

/** One branch's run of a session's log: it starts at `firstSeq` and continues the history after `parentSeq`. */
export const HistorySegmentSchema = z.object({
  firstSeq: z.number().int().min(0),
  parentSeq: z.number().int().min(-1),
});
/** A run of a session's log that continues the history after `parentSeq` (see `SessionRecord.segments`). */
export type HistorySegment = z.infer<typeof HistorySegmentSchema>;
/** Tags a session may carry at once. */
export const MAX_SESSION_TAGS = 20;

/** A tag: a letter or digit, then letters, digits and `-_.:/`, at most 40 characters. */
export const SessionTagSchema = z
  .string()
  .regex(
    /^[\p{L}\p{N}][\p{L}\p{N}\-_.:/]{0,39}$/u,
    'a tag is a letter or digit, then letters, digits or -_.:/ (at most 40)',
  );

/** `session.json`: a session's metadata. A superset of seed 004's SessionListData. */
export const SessionRecordSchema = SessionListDataSchema.extend({
  formatVersion: FormatVersion,
  sessionId: IdSchema,
  /** pm, dev, qa, harness, merge, or a role name for drafts. */
  agentType: z.string(),
  scope: SessionScopeSchema,
  title: z.string().optional(),
  /** Imported sessions are read only: their native transcript is never modified. */
  readOnly: z.boolean().optional(),
  createdAt: z.number().int().nonnegative(),
  updatedAt: z.number().int().nonnegative(),
  native: NativeSessionRefSchema.optional(),
  settings: SessionSettingsSchema,
  stats: SessionStatsSchema,
  /** A cached copy of the conversation's metrics, for listing without loading the log. */
  metrics: SessionMetricsSchema.optional(),
  /** Messages at or below this `seq` are hidden from requests (`clearMessages`); they stay on disk. */
  clearedThroughSeq: z.number().int().min(-1).optional(),
  /**
   * Set on a fork: the session it was forked from and the last `seq` of that session's history it
   * holds. Optional, so records written before forks existed keep format version 1.
   */
  forkedFrom: z.object({ sessionId: IdSchema, seq: z.number().int().min(-1) }).optional(),
  /**
   * The branches after a rewind, in `firstSeq` order: each segment is the run of the log from
   * `firstSeq` to the next segment's `firstSeq` - 1 (the last one to the log's end), and continues
   * the history after `parentSeq`. The root segment is implicit (it continues `forkedFrom`, or
   * starts the session). Optional: a session that never branched has none.
   */
  segments: z.array(HistorySegmentSchema).optional(),
  /** The seq the active branch ends at when that is not the log's end (after a rewind or a switch, until the next append). */
  head: z.number().int().min(-1).optional(),
  /** Words a person filed the session under (`parley sessions tag`); listing filters on one. */
  tags: z.array(SessionTagSchema).max(MAX_SESSION_TAGS).optional(),
  /** Pinned sessions are listed before the others. */
  pinned: z.boolean().optional(),
});
/** A session as the store keeps it: its id, scope, back end, settings, status and stats. */
export type SessionRecord = z.infer<typeof SessionRecordSchema>;

/** The zod schema of a `SessionFilter`. */
export const SessionFilterSchema = z.object({
  status: z.enum(['active', 'archived']).optional(),
  /** Back end (seed 004's architecture type). */
  type: z.string().optional(),
  agentType: z.string().optional(),
  scopeKind: z.enum(['feature', 'task', 'draft', 'workflow', 'imported']).optional(),
  featureId: z.string().optional(),
  taskId: z.string().optional(),
  taskState: z.string().optional(),
  /** Only sessions carrying this tag. */
  tag: z.string().optional(),
  /** Only pinned sessions (true) or only unpinned ones (false). */
  pinned: z.boolean().optional(),
});
/** What `listSessions` selects on: agent type, scope, status, back end, tag, pinned. */
export type SessionFilter = z.infer<typeof SessionFilterSchema>;

export function matchesFilter(record: SessionRecord, filter: SessionFilter = {}): boolean {
  if (filter.status !== undefined && record.status !== filter.status) return false;
  if (filter.type !== undefined && record.type !== filter.type) return false;
  if (filter.agentType !== undefined && record.agentType !== filter.agentType) return false;
  if (filter.scopeKind !== undefined && record.scope.kind !== filter.scopeKind) return false;
  const scope = record.scope;
  const featureId = scope.kind === 'feature' || scope.kind === 'task' ? scope.featureId : undefined;
  if (filter.featureId !== undefined && featureId !== filter.featureId) return false;
  if (filter.taskId !== undefined && (scope.kind !== 'task' || scope.taskId !== filter.taskId)) return false;
  if (filter.taskState !== undefined && (scope.kind !== 'task' || scope.taskState !== filter.taskState)) return false;
  if (filter.tag !== undefined && !(record.tags ?? []).includes(filter.tag)) return false;
  if (filter.pinned !== undefined && (record.pinned === true) !== filter.pinned) return false;
  return true;
}

export const CheckpointSummarySchema = z.object({
  completed: z.array(z.string()),
  inProgress: z.array(z.string()),
  /** Seed 002's "Still To Do". */
  pending: z.array(z.string()),
  decisions: z.array(z.string()),
  blockers: z.array(z.string()),
});
/** The sections of a checkpoint's summary: completed, in progress, pending, decisions and blockers. */
export type CheckpointSummary = z.infer<typeof CheckpointSummarySchema>;

export const RalphLoopSchema = z.object({
  currentIteration: z.number().int().nonnegative(),
  passedChecks: z.array(z.string()),
  failedChecks: z.array(z.string()),
  lastError: z.string().optional(),
});
export type RalphLoop = z.infer<typeof RalphLoopSchema>;

/** Something still alive that a summary must not forget: a worker agent and its status. */
export const LiveHandleSchema = z.object({
  id: z.string(),
  kind: z.string(),
  label: z.string().optional(),
  status: z.string(),
});
export type LiveHandle = z.infer<typeof LiveHandleSchema>;

/**
 * Which summarizer wrote a checkpoint's summary: a model (its back end and model when known) or the
 * structural builder, which needs no model (`fallback`: used because the model summarizer kept failing).
 * Absent in checkpoints written before it was recorded.
 */
export const CheckpointSummarizerSchema = z.object({
  kind: z.enum(['model', 'structural']),
  backend: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  fallback: z.boolean().optional(),
});
export type CheckpointSummarizer = z.infer<typeof CheckpointSummarizerSchema>;

/** `checkpoints/v{version}.json`: one compaction's result. Every version is kept. */
export const CheckpointSchema = z.object({
  formatVersion: FormatVersion,
  sessionId: IdSchema,
  /** 1, 2, 3…: one more than the newest existing version. */
  version: z.number().int().positive(),
  /** ISO 8601. */
  createdAt: z.string(),
  trigger: z.enum(['auto', 'manual', 'native', 'import', 'update']),
  /** A copy of an older version made current again (`restoreCheckpoint`): that version's number. */
  restoredFrom: z.number().int().positive().optional(),
  instructions: z.string().optional(),
  summary: CheckpointSummarySchema,
  /** Optional: checkpoints written before it was recorded do not have it. */
  summarizer: CheckpointSummarizerSchema.optional(),
  /** User intents kept verbatim (the first message, pinned messages). */
  pinned: z.array(z.string()),
  /** The most recent user messages folded in, kept verbatim within a token allowance (refreshed by each compaction). */
  userRequests: z.array(z.string()).optional(),
  liveHandles: z.array(LiveHandleSchema),
  ralphLoop: RalphLoopSchema.optional(),
  /** The log range folded into this checkpoint (cumulative: from the session's start). */
  covers: z.object({
    throughSeq: z.number().int().min(-1),
    fromSeq: z.number().int().min(0).optional(),
    messageCount: z.number().int().nonnegative(),
    oldestMessageTimestamp: z.string().optional(),
    newestMessageTimestamp: z.string().optional(),
  }),
  tokens: z.object({
    checkpoint: z.number().int().nonnegative(),
    lastCompactionInput: z.number().int().nonnegative(),
    totalSaved: z.number().int().nonnegative(),
  }),
});
/** One version of a session's checkpoint: the summary of the history it covers, up to a `seq`. */
export type Checkpoint = z.infer<typeof CheckpointSchema>;
/** A checkpoint as a caller writes it; the store adds the format version, version number and session id. */
export type CheckpointInput = Omit<Checkpoint, 'formatVersion' | 'version' | 'sessionId'>;

/** `context.json`: what the last request used as context (it is rebuilt from its sources per request). */
export const ContextDocumentSchema = z.object({
  formatVersion: FormatVersion,
  sessionId: IdSchema,
  updatedAt: z.string(),
  sections: z.record(z.string(), z.string()),
  tokens: z.number().int().nonnegative(),
});
/** `context.json`: the context sections the last request used, with their tokens. */
export type ContextDocument = z.infer<typeof ContextDocumentSchema>;

/** `agent-description.json`: the agent's role, instructions and tools. */
export const AgentDescriptionSchema = z.object({
  formatVersion: FormatVersion,
  sessionId: IdSchema,
  agentType: z.string(),
  role: z.string(),
  instructions: z.array(z.string()),
  allowedTools: z.array(z.string()),
  toolInstructions: z.string().optional(),
  createdAt: z.string(),
  tokens: z.number().int().nonnegative(),
});
/** `agent-description.json`: the agent's role, instructions and allowed tools. */
export type AgentDescription = z.infer<typeof AgentDescriptionSchema>;

export const FeatureSchema = z.object({
  formatVersion: FormatVersion,
  featureId: IdSchema,
  name: z.string(),
  goal: z.string().optional(),
  spec: z.string().optional(),
  /** The feature-level session (seed 002's feature.json `sessionId`). */
  sessionId: IdSchema.optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type Feature = z.infer<typeof FeatureSchema>;

/** Seed 002's task.json: sessions per state and the current state. */
export const FeatureTaskSchema = z.object({
  formatVersion: FormatVersion,
  featureId: IdSchema,
  taskId: IdSchema,
  title: z.string(),
  description: z.string(),
  dependencies: z.array(IdSchema),
  states: z.record(z.string(), z.object({ sessionIds: z.array(IdSchema) })),
  currentState: z.string().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type FeatureTask = z.infer<typeof FeatureTaskSchema>;
