import { z } from 'zod';
import { UsageSchema } from '../conversation/index.js';
import { IdSchema } from '../store/index.js';
import type { AgentInfo, SubmitPromptResultSchema } from '../protocol/index.js';

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
  /** The role a client drafts for a first message: `defaultRole` in the project's `parley.config.json`, else `product-analyst`. */
  defaultRole: IdSchema,
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

export const DraftSummarySchema = z.object({
  sessionId: z.string(),
  taskSlug: z.string(),
  turns: z.number().int().nonnegative(),
  cost: z.number().nonnegative(),
  durationMs: z.number().nonnegative(),
});
export type DraftSummary = z.infer<typeof DraftSummarySchema>;

// ---- what the DraftService hands the server ----------------------------------------------------

/**
 * Draft status, agents, dispatch results and role file errors go to clients as they are: they are
 * the wire contract's own shapes, defined once in the protocol layer.
 */
export type { AgentInfo, DispatchResult, DraftStatus, RoleFileError } from '../protocol/index.js';
export type AgentStatus = AgentInfo['status'];
/** `submit_prompt`: with an active draft the turn was accepted (it streams); without, the dispatch's result. */
export type SubmitResult = z.infer<typeof SubmitPromptResultSchema>;

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
