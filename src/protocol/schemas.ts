import * as z from 'zod';
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
  z.object({
    kind: z.literal('imported'),
    source: z.string(),
    path: z.string(),
    nativeSessionId: z.string().optional(),
  }),
]);

/** A session's metadata (the store's `session.json`). */
export const SessionInfoSchema = z.object({
  sessionId: z.string(),
  /** The back end. */
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
  native: z
    .object({ backend: z.string(), nativeSessionId: z.string(), transcriptPath: z.string().optional() })
    .optional(),
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
  /** A fork: the session it was forked from and the last `seq` of that session's history it holds. */
  forkedFrom: z.object({ sessionId: z.string(), seq: z.number().int() }).optional(),
  /** The branches after rewinds: each run of the log from `firstSeq` continues the history after `parentSeq`. */
  segments: z.array(z.object({ firstSeq: z.number().int(), parentSeq: z.number().int() })).optional(),
  /** Where the active branch ends when that is not the log's end (after a rewind or a branch switch). */
  head: z.number().int().optional(),
  /** What a person filed the session under (`update_session`). */
  tags: z.array(z.string()).optional(),
  /** Listed before the others. */
  pinned: z.boolean().optional(),
});
/** A session as the protocol shows it. */
export type SessionInfo = z.infer<typeof SessionInfoSchema>;

/** Which summarizer wrote a checkpoint: a model (its back end and model), or the structural builder that needs none (`fallback`: the model kept failing). */
export const CheckpointSummarizerWireSchema = z.object({
  kind: z.enum(['model', 'structural']),
  backend: z.string().optional(),
  model: z.string().optional(),
  fallback: z.boolean().optional(),
});

/** One compaction's result (the store's `checkpoints/v{n}.json`). Every version is kept. */
export const CheckpointWireSchema = z.object({
  sessionId: z.string(),
  version: z.number().int().positive(),
  createdAt: z.string(),
  trigger: z.enum(['auto', 'manual', 'native', 'import', 'update']),
  /** A copy of an older version made current again (`restoreCheckpoint`): that version's number. */
  restoredFrom: z.number().int().positive().optional(),
  instructions: z.string().optional(),
  summarizer: CheckpointSummarizerWireSchema.optional().describe(
    'who wrote the summary; absent in checkpoints written before it was recorded',
  ),
  summary: z.object({
    completed: z.array(z.string()),
    inProgress: z.array(z.string()),
    pending: z.array(z.string()),
    decisions: z.array(z.string()),
    blockers: z.array(z.string()),
  }),
  pinned: z.array(z.string()),
  liveHandles: z.array(
    z.object({ id: z.string(), kind: z.string(), label: z.string().optional(), status: z.string() }),
  ),
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
/** A checkpoint as the protocol shows it. */
export type CheckpointWire = z.infer<typeof CheckpointWireSchema>;

const IsoDate = z.string().describe('ISO 8601');

export const ProjectInfoSchema = z.object({
  name: z.string(),
  /** The project folder. */
  path: z.string(),
  /** Its Parley data folder. */
  dataDir: z.string(),
  description: z.string().optional(),
  /** True for the project the server runs in. */
  current: z.boolean(),
  defaultRole: z
    .string()
    .describe(
      "The role a first message typed before any draft drafts (`submit_prompt { draft }` without a role): `defaultRole` in the project's `parley.config.json`, else `product-analyst`.",
    ),
});
/** A project as the protocol shows it. */
export type ProjectInfo = z.infer<typeof ProjectInfoSchema>;

export const TaskInfoSchema = z.object({
  project: z.string(),
  slug: z.string(),
  title: z.string(),
  description: z.string(),
  /** open | in_progress | done | cancelled */
  state: z.string(),
  taskDir: z.string(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
  /** The draft working on this task now, if any. */
  activeDraft: z.object({ sessionId: z.string(), role: z.string(), channelId: z.string() }).optional(),
});
/** A task as the protocol shows it. */
export type TaskInfo = z.infer<typeof TaskInfoSchema>;

export const RoleInfoSchema = z.object({
  name: z.string(),
  description: z.string(),
  backend: z.string().optional(),
  model: z.string().optional(),
  /**
   * `agent-draft`, `projects-list`, `projects-create` gate the orchestration tools; `files-read`,
   * `files-write`, `shell` the workspace tools (managed back ends).
   */
  permissions: z.array(z.string()),
  allowedTools: z.array(z.string()).optional(),
  permissionMode: z.string().optional(),
  maxTurns: z.number().int().positive().optional(),
  /** Whether `run_command` may use the network in the sandbox. */
  network: z.boolean().optional(),
  /** The role file's Markdown body. */
  instructions: z.string(),
  /** `builtin`, or the role file's path. */
  source: z.string(),
});
/** A role as the protocol shows it: its name, description and permissions. */
export type RoleInfo = z.infer<typeof RoleInfoSchema>;

// ---- approvals of the workspace tools --------------------------------------------------------------

/** `default` asks before every write and command, `acceptEdits` only before commands, `bypassPermissions` never, `plan` allows reads only. */
export const PermissionModeWireSchema = z.enum(['default', 'acceptEdits', 'bypassPermissions', 'plan']);
/** `allow_always` remembers the request's `allowAlwaysScope` for the session (a command prefix, or the tool for edits). */
export const PermissionDecisionSchema = z.enum(['allow_once', 'allow_always', 'deny']);

/** What a workspace tool asks before it changes a file or runs a command. */
export const PermissionRequestSchema = z.object({
  requestId: z.string().describe('Unique; `answer_permission` names it.'),
  sessionId: z.string(),
  conversationId: z
    .string()
    .optional()
    .describe("A worker's thread in the session; absent for the drafted agent itself (`main`)."),
  tool: z.string().describe('`edit_file`, `write_file` or `run_command`.'),
  kind: z.enum(['edit', 'write', 'command']),
  title: z.string().describe('One line to show: "Edit src/app.ts", "Run `npm test`".'),
  path: z.string().optional().describe('edit/write: the file, relative to the project folder.'),
  diff: z.string().optional().describe('edit/write: the change as a unified diff (`--- a/…`, `+++ b/…`, hunks).'),
  command: z.string().optional().describe('command: the shell command.'),
  cwd: z
    .string()
    .optional()
    .describe('command: its working folder, relative to the project folder (`.`: the folder itself).'),
  allowAlwaysScope: z
    .string()
    .optional()
    .describe(
      'What `allow_always` remembers, worded for a person; absent when only a one-time answer is possible (a chained or redirected command): `allow_always` then counts as `allow_once`.',
    ),
  requestedAt: z.string().describe('ISO 8601.'),
});
/** A tool call that waits for a person's approval. */
export type PermissionRequest = z.infer<typeof PermissionRequestSchema>;

/** What confines `run_command` in the project. */
export const SandboxWireSchema = z.object({
  kind: z.enum(['bwrap', 'none']),
  detail: z.string(),
  binary: z.string().optional(),
});

/** A role file that could not be read: names the file and the field. */
export const RoleFileErrorSchema = z.object({
  file: z.string(),
  /** Dotted path of the field (`permissions.1`); absent when the whole file is unreadable. */
  field: z.string().optional(),
  message: z.string(),
});
/** A role file that could not be read, and why. */
export type RoleFileError = z.infer<typeof RoleFileErrorSchema>;

/** How a goal is judged after each turn: by a model (the draft's back end or a named one) or by a command (exit code 0 = met). */
export const GoalJudgeSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('model'),
    /** A back end by name; absent: the draft's own. */
    backend: z.string().min(1).optional(),
    model: z.string().min(1).optional(),
  }),
  z.strictObject({
    kind: z.literal('command'),
    /** Run by /bin/sh in the project's folder, e.g. `npm test`. */
    command: z.string().min(1),
    /** Milliseconds before the command is killed and the judgement counts as not met. Default 600000. */
    timeoutMs: z.number().int().positive().optional(),
  }),
]);
export type GoalJudge = z.infer<typeof GoalJudgeSchema>;

/** What a goal may spend: turns (required), and optionally US dollars and milliseconds since it was set. */
export const GoalBudgetSchema = z.strictObject({
  turns: z.number().int().positive('the turn budget must be 1 or more'),
  costUsd: z.number().positive('the cost budget must be more than 0').optional(),
  timeMs: z.number().int().positive('the time budget must be more than 0 ms').optional(),
});
export type GoalBudget = z.infer<typeof GoalBudgetSchema>;

/** One judgement after a turn of a goal. */
export const GoalJudgementSchema = z.object({
  turn: z.number().int().positive(),
  met: z.boolean(),
  /** What is still missing, in the judge's words (or the command's output tail). */
  missing: z.string(),
  progress: z.boolean(),
  at: IsoDate,
});
export type GoalJudgement = z.infer<typeof GoalJudgementSchema>;

/** Why a goal ended. */
export const GoalEndReasonSchema = z.enum(['met', 'turns', 'cost', 'time', 'stuck', 'stopped', 'error']);
export type GoalEndReason = z.infer<typeof GoalEndReasonSchema>;

/** A draft's goal: its condition, judge, budget, what it used, its judgements, and how it ended. */
export const GoalStatusSchema = z.object({
  goalId: z.string(),
  condition: z.string(),
  judge: GoalJudgeSchema,
  budget: GoalBudgetSchema,
  used: z.object({ turns: z.number().int().nonnegative(), costUsd: z.number().nonnegative(), timeMs: Millis }),
  startedAt: IsoDate,
  state: z.enum(['running', 'ended']),
  judgements: z.array(GoalJudgementSchema),
  ended: z.object({ reason: GoalEndReasonSchema, message: z.string(), at: IsoDate }).optional(),
});
export type GoalStatus = z.infer<typeof GoalStatusSchema>;

/**
 * `get_draft_status`'s `session`: seed 000's DraftSession under the seed's own names (sessionId …
 * maxOutputTokens), beside Parley's (project, backend, model, costUnknown, contextPct, turnRunning,
 * activeAgents, runBy). Any server answers for any channel's draft: one run by another server sharing
 * the store is read from the store and its session log. The `draft_status` notification keeps its own seed names (`costUsd`, `lastActivity`).
 */
export const DraftStatusSchema = z.object({
  // seed 000's DraftSession
  sessionId: z.string(),
  role: z.string(),
  taskSlug: z.string(),
  /** The task's folder (`draft.json` lives in it). */
  taskDir: z.string(),
  channelId: z.string(),
  startedAt: IsoDate,
  lastActivityAt: IsoDate,
  turnCount: z.number().int().nonnegative(),
  status: z.enum(['active', 'closed']),
  /** US dollars, every turn of the draft so far. */
  cumulativeCostUsd: z.number().nonnegative(),
  lastInputTokens: z.number().nonnegative(),
  lastOutputTokens: z.number().nonnegative(),
  contextWindow: z.number().int().nonnegative(),
  maxOutputTokens: z.number().int().nonnegative(),
  // Parley's own
  project: z.string(),
  backend: z.string(),
  model: z.string().optional(),
  /** Some turn ran on a model with no known price: `cumulativeCostUsd` is a lower bound. */
  costUnknown: z.boolean(),
  /** `lastInputTokens / contextWindow * 100`; null while the window is unknown. */
  contextPct: z.number().nonnegative().nullable(),
  /** A turn is streaming now. */
  turnRunning: z.boolean(),
  /** Workers of this draft that are queued or running. */
  activeAgents: z.number().int().nonnegative(),
  /**
   * Which Parley server runs the draft (several may share one database): its lease holder, `here`
   * when that is the server answering. Absent while no server holds a live lease (the one that ran
   * it stopped or died): the next prompt, on any server, runs it there.
   */
  runBy: z
    .object({
      server: z.string(),
      here: z.boolean(),
      /** When the holder's lease runs out unless renewed (by the store's clock); given for another server's. */
      leaseExpiresAt: IsoDate.optional(),
    })
    .optional(),
  /** The draft's goal, running or the last one that ended. */
  goal: GoalStatusSchema.optional(),
});
/** A draft's status: its role, task, session, agents and whether a turn is running. */
export type DraftStatus = z.infer<typeof DraftStatusSchema>;

export const AgentStatusValueSchema = z.enum(['queued', 'running', 'completed', 'failed', 'killed']);

/** An entry of the agent pool: a drafted agent (from draft to undraft) or a worker it dispatched. */
export const AgentInfoSchema = z.object({
  agentId: z.string(),
  kind: z.enum(['draft', 'worker']),
  role: z.string(),
  project: z.string(),
  taskSlug: z.string().optional(),
  channelId: z.string().optional(),
  status: AgentStatusValueSchema,
  /** The session whose log holds the agent's blocks (a worker's thread has `conversationId = agentId`). */
  sessionId: z.string(),
  parentSessionId: z.string().optional(),
  prompt: z.string().optional(),
  startedAt: IsoDate,
  endedAt: IsoDate.optional(),
  costUsd: z.number().nonnegative(),
});
/** A worker agent as the protocol shows it: its id, role and status. */
export type AgentInfo = z.infer<typeof AgentInfoSchema>;

/** The structured result of the autonomous dispatch path (seed 000's DispatchResult). */
export const DispatchResultSchema = z.object({
  agentId: z.string(),
  role: z.string(),
  status: AgentStatusValueSchema,
  timedOut: z.boolean(),
  /** The final answer parsed against the output schema, when there was one. */
  output: z.unknown().optional(),
  summary: z.string(),
  usage: z.object({
    inputTokens: z.number(),
    outputTokens: z.number(),
    cacheReadTokens: z.number(),
    cacheWriteTokens: z.number(),
  }),
  costUsd: z.number().nonnegative(),
  costUnknown: z.boolean(),
  durationMs: z.number().nonnegative(),
  attempts: z.number().int().nonnegative(),
  sessionId: z.string(),
  conversationId: z.string(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
/** What a finished worker returned. */
export type DispatchResult = z.infer<typeof DispatchResultSchema>;
