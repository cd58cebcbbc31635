import { z } from 'zod';
import { UsageSchema } from '../conversation/index.js';
import { IdSchema } from '../store/index.js';

/**
 * The draft layer's data: seed 000's DraftSession, what `draft.json` and `task.json` hold, and the
 * shapes the DraftService hands to the server. Schemas first; every type is `z.infer` of one.
 */

/** Version of `draft.json`, `task.json`, `project.json` and `projects.json`. */
export const DRAFT_FORMAT_VERSION = 1;
const FormatVersion = z.literal(DRAFT_FORMAT_VERSION);

/** ISO 8601 timestamps in files: seed 000's `Date` fields, as JSON keeps them. */
const IsoDate = z.iso.datetime({ offset: true });

// ---- permissions and roles --------------------------------------------------------------------

/**
 * What a role may do beyond read-only tools (seed 000, "MCP gating"):
 * `agent-draft` → draft_agent / await_agent / kill_agent / list_agents;
 * `projects-list` → list_projects; `projects-create` → create_project, create_task.
 */
export const PermissionSchema = z.enum(['agent-draft', 'projects-list', 'projects-create']);
export type Permission = z.infer<typeof PermissionSchema>;

export const PermissionModeSchema = z.enum(['default', 'acceptEdits', 'bypassPermissions', 'plan']);

/**
 * The YAML front matter of a role file (`<dataDir>/roles/<name>.md`). Strict: an unknown key is a
 * typo the user wants to hear about (a misspelt `permissions` would silently grant nothing).
 */
export const RoleFrontMatterSchema = z.strictObject({
  /** Defaults to the file name without `.md`. */
  name: IdSchema.optional(),
  description: z.string().optional(),
  /** Back end name (`claude-sdk`, `anthropic-api`, `scripted`…); default: the server's default back end. */
  backend: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  permissions: z.array(PermissionSchema).default([]),
  /** Back-end tools the agent may use without asking (Claude SDK `allowedTools`). */
  allowedTools: z.array(z.string().min(1)).optional(),
  permissionMode: PermissionModeSchema.optional(),
  /** Cap on agentic turns per query. */
  maxTurns: z.number().int().positive().optional(),
});
export type RoleFrontMatter = z.infer<typeof RoleFrontMatterSchema>;

export const RoleInfoSchema = z.object({
  name: IdSchema,
  description: z.string(),
  backend: z.string().optional(),
  model: z.string().optional(),
  permissions: z.array(PermissionSchema),
  allowedTools: z.array(z.string()).optional(),
  permissionMode: PermissionModeSchema.optional(),
  maxTurns: z.number().int().positive().optional(),
  /** The Markdown body: the role's instructions. */
  instructions: z.string(),
  /** `builtin`, or the role file's path. */
  source: z.string(),
});
export type RoleInfo = z.infer<typeof RoleInfoSchema>;

/** A role file that could not be used: names the file and the offending field. */
export const RoleFileErrorSchema = z.object({
  file: z.string(),
  /** Dotted path of the field (`permissions.1`), absent when the file as a whole is unreadable. */
  field: z.string().optional(),
  message: z.string(),
});
export type RoleFileError = z.infer<typeof RoleFileErrorSchema>;

// ---- projects and tasks -----------------------------------------------------------------------

/** `<dataDir>/project.json`: optional; without it the project is named after its folder. */
export const ProjectFileSchema = z.object({
  formatVersion: FormatVersion,
  name: IdSchema,
  description: z.string().optional(),
  createdAt: IsoDate,
});
export type ProjectFile = z.infer<typeof ProjectFileSchema>;

export const ProjectInfoSchema = z.object({
  name: IdSchema,
  /** The project folder. */
  path: z.string(),
  /** Its Parley data folder (default `<path>/.parley`). */
  dataDir: z.string(),
  description: z.string().optional(),
  /** True for the project `parley serve` runs in. */
  current: z.boolean(),
});
export type ProjectInfo = z.infer<typeof ProjectInfoSchema>;

/** `<dataDir>/projects.json`: the other projects this server knows. */
export const ProjectRegistrySchema = z.object({
  formatVersion: FormatVersion,
  projects: z.array(
    z.object({
      name: IdSchema,
      path: z.string().min(1),
      dataDir: z.string().min(1).optional(),
      description: z.string().optional(),
      createdAt: IsoDate,
    }),
  ),
});
export type ProjectRegistry = z.infer<typeof ProjectRegistrySchema>;

export const TaskStateSchema = z.enum(['open', 'in_progress', 'done', 'cancelled']);
export type TaskState = z.infer<typeof TaskStateSchema>;

/** `<dataDir>/tasks/<slug>/task.json`. */
export const TaskFileSchema = z.object({
  formatVersion: FormatVersion,
  slug: IdSchema,
  title: z.string().min(1),
  description: z.string(),
  state: TaskStateSchema,
  createdAt: IsoDate,
  updatedAt: IsoDate,
});
export type TaskFile = z.infer<typeof TaskFileSchema>;

export const TaskInfoSchema = z.object({
  project: IdSchema,
  slug: IdSchema,
  title: z.string(),
  description: z.string(),
  state: TaskStateSchema,
  /** `<dataDir>/tasks/<slug>`: where `task.json` and `draft.json` live. */
  taskDir: z.string(),
  createdAt: IsoDate,
  updatedAt: IsoDate,
  /** The draft working on this task now, if any. */
  activeDraft: z.object({ sessionId: z.string(), role: z.string(), channelId: z.string() }).optional(),
});
export type TaskInfo = z.infer<typeof TaskInfoSchema>;

// ---- drafts -----------------------------------------------------------------------------------

/**
 * Seed 000's DraftSession, field for field (its `Date`s as ISO strings), persisted as
 * `<taskDir>/draft.json`, plus what Parley needs to resume it: project, back end, continuity and
 * the native session id.
 */
export const DraftSessionSchema = z.object({
  formatVersion: FormatVersion,
  // seed 000
  /** Parley's session id (a random UUID); also the native id on a native back end's first turn. */
  sessionId: IdSchema,
  role: IdSchema,
  taskSlug: IdSchema,
  taskDir: z.string(),
  channelId: z.string().min(1),
  startedAt: IsoDate,
  lastActivityAt: IsoDate,
  /** Completed user→agent exchanges. */
  turnCount: z.number().int().nonnegative(),
  status: z.enum(['active', 'closed']),
  /** Sum of per-turn costs from the session log, workers included. */
  cumulativeCostUsd: z.number().nonnegative(),
  /** Occupancy of the last request: input + cache read + cache write tokens. */
  lastInputTokens: z.number().nonnegative(),
  lastOutputTokens: z.number().nonnegative(),
  /** 0 until a back end reports it. */
  contextWindow: z.number().int().nonnegative(),
  maxOutputTokens: z.number().int().nonnegative(),
  // Parley
  project: IdSchema,
  /** Back end name. */
  backend: z.string().min(1),
  model: z.string().optional(),
  continuity: z.enum(['native', 'managed']),
  /** The back end's own session id once it reported one (native continuity). */
  nativeSessionId: z.string().optional(),
  /** A native turn has been started, so the next one resumes instead of creating. */
  nativeStarted: z.boolean().default(false),
  /** Some turn ran on a model with no known price: the cost is a lower bound. */
  costUnknown: z.boolean().default(false),
  closedAt: IsoDate.optional(),
  /**
   * Why the draft closed: `undraft`; `native_resume_failed` (auto-undraft: the back end could not
   * resume its session); `recovery_failed` (after a restart its session was gone or its channel taken).
   */
  closeReason: z.enum(['undraft', 'native_resume_failed', 'recovery_failed']).optional(),
});
export type DraftSession = z.infer<typeof DraftSessionSchema>;

/** What `get_draft_status` and `/context` show: the DraftSession's identity and metrics, plus what is computed from them. */
export const DraftStatusSchema = z.object({
  sessionId: z.string(),
  role: z.string(),
  project: z.string(),
  taskSlug: z.string(),
  channelId: z.string(),
  backend: z.string(),
  model: z.string().optional(),
  status: z.enum(['active', 'closed']),
  turnCount: z.number().int().nonnegative(),
  /** The DraftSession's `cumulativeCostUsd`. */
  costUsd: z.number().nonnegative(),
  costUnknown: z.boolean(),
  lastInputTokens: z.number().nonnegative(),
  lastOutputTokens: z.number().nonnegative(),
  contextWindow: z.number().int().nonnegative(),
  maxOutputTokens: z.number().int().nonnegative(),
  /** Occupancy of the last request over the window, in percent; null until the window is known. */
  contextPct: z.number().nonnegative().nullable(),
  startedAt: IsoDate,
  /** The DraftSession's `lastActivityAt`. */
  lastActivity: IsoDate,
  /** A turn is streaming now. */
  turnRunning: z.boolean(),
  /** Workers of this draft that are queued or running. */
  activeAgents: z.number().int().nonnegative(),
});
export type DraftStatus = z.infer<typeof DraftStatusSchema>;

export const DraftSummarySchema = z.object({
  sessionId: z.string(),
  taskSlug: z.string(),
  turns: z.number().int().nonnegative(),
  cost: z.number().nonnegative(),
  durationMs: z.number().nonnegative(),
});
export type DraftSummary = z.infer<typeof DraftSummarySchema>;

// ---- worker agents ----------------------------------------------------------------------------

export const AgentStatusSchema = z.enum(['queued', 'running', 'completed', 'failed', 'killed']);
export type AgentStatus = z.infer<typeof AgentStatusSchema>;

/** An entry of the agent pool: a drafted agent (registered from draft to undraft) or a worker. */
export const AgentInfoSchema = z.object({
  agentId: z.string(),
  kind: z.enum(['draft', 'worker']),
  role: z.string(),
  project: z.string(),
  taskSlug: z.string().optional(),
  channelId: z.string().optional(),
  status: AgentStatusSchema,
  /** The session whose log holds this agent's blocks; a worker's thread there has `conversationId = agentId`. */
  sessionId: z.string(),
  /** Workers: the drafting session that dispatched them. */
  parentSessionId: z.string().optional(),
  /** Workers: the task prompt, first line. */
  prompt: z.string().optional(),
  startedAt: IsoDate,
  endedAt: IsoDate.optional(),
  costUsd: z.number().nonnegative(),
});
export type AgentInfo = z.infer<typeof AgentInfoSchema>;

/** What `await_agent` and the autonomous `submit_prompt` answer. */
export const DispatchResultSchema = z.object({
  agentId: z.string(),
  role: z.string(),
  /** `queued`/`running` only when `await_agent` timed out before the worker finished; call it again. */
  status: AgentStatusSchema,
  timedOut: z.boolean(),
  /** The worker's final answer parsed and validated against the output schema (absent without a schema or on failure). */
  output: z.unknown().optional(),
  /** The worker's final text (or the output's `summary`), for people and for the drafting model. */
  summary: z.string(),
  usage: UsageSchema,
  costUsd: z.number().nonnegative(),
  costUnknown: z.boolean(),
  durationMs: z.number().nonnegative(),
  /** Back-end turns used: 1, or 2 after a repair attempt. */
  attempts: z.number().int().nonnegative(),
  sessionId: z.string(),
  conversationId: z.string(),
  error: z.object({ code: z.string(), message: z.string() }).optional(),
});
export type DispatchResult = z.infer<typeof DispatchResultSchema>;

/** `submit_prompt`: with an active draft the turn was accepted (it streams); without, the dispatch's result. */
export const SubmitResultSchema = z.discriminatedUnion('mode', [
  z.object({
    mode: z.literal('draft'),
    accepted: z.literal(true),
    sessionId: z.string(),
    /** The `seq` of the stored user message: acknowledged, it survives any crash from here on. */
    seq: z.number().int().nonnegative(),
  }),
  z.object({ mode: z.literal('dispatch'), sessionId: z.string(), result: DispatchResultSchema }),
]);
export type SubmitResult = z.infer<typeof SubmitResultSchema>;

// ---- tool inputs (the MCP tools a drafted agent gets) -----------------------------------------

export const DraftAgentInputSchema = z.strictObject({
  role: IdSchema.describe('Role of the worker (see list_roles).'),
  prompt: z.string().min(1).describe('The task for the worker: what to do and what to report.'),
  outputSchema: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('JSON Schema the worker’s final answer must match; await_agent returns it parsed as `output`.'),
});
export type DraftAgentInput = z.infer<typeof DraftAgentInputSchema>;

export const AwaitAgentInputSchema = z.strictObject({
  agentId: z.string().min(1).describe('The id draft_agent returned.'),
  timeoutSeconds: z.number().positive().max(3600).optional().describe('How long to wait (default 300). On timeout the result says `timedOut`; call again.'),
});
export type AwaitAgentInput = z.infer<typeof AwaitAgentInputSchema>;

export const AgentIdInputSchema = z.strictObject({ agentId: z.string().min(1).describe('The worker’s id.') });
export const EmptyInputSchema = z.strictObject({});

export const ListTasksInputSchema = z.strictObject({
  project: IdSchema.optional().describe('Project name (default: the draft’s project).'),
});
export const CreateProjectInputSchema = z.strictObject({
  name: IdSchema.describe('Project name: letters, digits, ".", "_", "-".'),
  path: z.string().min(1).optional().describe('Project folder (default: <dataDir>/projects/<name>).'),
  description: z.string().optional(),
});
export type CreateProjectInput = z.infer<typeof CreateProjectInputSchema>;
export const CreateTaskInputSchema = z.strictObject({
  project: IdSchema.optional().describe('Project name (default: the draft’s project).'),
  title: z.string().min(1),
  description: z.string().optional(),
  slug: IdSchema.optional(),
});
export type CreateTaskInput = z.infer<typeof CreateTaskInputSchema>;
