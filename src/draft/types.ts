import * as z from 'zod';
import { UsageSchema } from '../conversation/index.js';
import { IdSchema } from '../store/index.js';
import type { AgentInfo, SubmitPromptResultSchema } from '../protocol/index.js';

/**
 * The draft layer's data: seed 000's DraftSession, what `draft.json` and `task.json` hold, and the
 * shapes the DraftService hands to the server. Schemas first; every type is `z.infer` of one.
 */

// The files' formats (draft.json, task.json, project.json, projects.json) are the DraftStore's
// records, defined in the store layer; re-exported here under the names the draft layer always had.
export {
  DRAFT_FORMAT_VERSION,
  DraftSessionSchema,
  ProjectFileSchema,
  ProjectRegistrySchema,
  TaskFileSchema,
  TaskStateSchema,
  type DraftSession,
  type ProjectFile,
  type ProjectRegistry,
  type TaskFile,
  type TaskState,
} from '../store/index.js';
import { TaskStateSchema } from '../store/index.js';

/** ISO 8601 timestamps in files: seed 000's `Date` fields, as JSON keeps them. */
const IsoDate = z.iso.datetime({ offset: true });

// ---- permissions and roles --------------------------------------------------------------------

/**
 * What a role may do beyond read-only tools (seed 000, "MCP gating"):
 * `agent-draft` → draft_agent / await_agent / kill_agent / list_agents;
 * `agent-converse` → open_conversation / say / close_conversation;
 * `projects-list` → list_projects; `projects-create` → create_project, create_task;
 * on managed back ends, the workspace tools (src/workspace/): `files-read` → read_file,
 * list_files, glob, grep; `files-write` → edit_file, write_file; `shell` → run_command.
 */
export const PermissionSchema = z.enum([
  'agent-draft',
  'agent-converse',
  'projects-list',
  'projects-create',
  'files-read',
  'files-write',
  'shell',
]);
export type Permission = z.infer<typeof PermissionSchema>;

// The workspace layer's modes: one definition, so `parley`'s public surface exports one schema.
import { PermissionModeSchema } from '../workspace/index.js';
export { PermissionModeSchema };

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
  /**
   * How the workspace tools ask before changing things: `default` asks before every write and
   * command, `acceptEdits` only before commands, `bypassPermissions` never, `plan` allows reads only.
   * Also given to native back ends (Claude SDK). Default `default`; the draft can change it.
   */
  permissionMode: PermissionModeSchema.optional(),
  /** Cap on agentic turns per query. */
  maxTurns: z.number().int().positive().optional(),
  /** Whether `run_command` may use the network inside the sandbox (default false). */
  network: z.boolean().optional(),
  /** Most messages this agent may `say` in one conversation (default 20). */
  maxConversationTurns: z.number().int().positive().optional(),
  /** Most conversations this agent may hold open at once (default 3). */
  maxOpenConversations: z.number().int().positive().optional(),
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
  network: z.boolean().optional(),
  maxConversationTurns: z.number().int().positive().optional(),
  maxOpenConversations: z.number().int().positive().optional(),
  /** The Markdown body: the role's instructions. */
  instructions: z.string(),
  /** `builtin`, or the role file's path. */
  source: z.string(),
});
export type RoleInfo = z.infer<typeof RoleInfoSchema>;

// ---- projects and tasks -----------------------------------------------------------------------

export const ProjectInfoSchema = z.object({
  name: IdSchema,
  /** The project folder. */
  path: z.string(),
  /** Its Parley data folder (default `<path>/.parley`). */
  dataDir: z.string(),
  description: z.string().optional(),
  /** True for the project `parley serve` runs in. */
  current: z.boolean(),
  /** The role a first message drafts (`submit_prompt { draft }`): `defaultRole` in the project's `parley.config.json`, else `product-analyst`. */
  defaultRole: IdSchema,
});
export type ProjectInfo = z.infer<typeof ProjectInfoSchema>;

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
  timeoutSeconds: z
    .number()
    .positive()
    .max(3600)
    .optional()
    .describe('How long to wait (default 300). On timeout the result says `timedOut`; call again.'),
});
export type AwaitAgentInput = z.infer<typeof AwaitAgentInputSchema>;

export const AgentIdInputSchema = z.strictObject({ agentId: z.string().min(1).describe('The worker’s id.') });

export const OpenConversationInputSchema = z.strictObject({
  role: IdSchema.describe('Role of the agent to talk with (see list_roles).'),
  topic: z.string().min(1).max(2000).describe('What the conversation is about; the other agent sees it first.'),
});
export type OpenConversationInput = z.infer<typeof OpenConversationInputSchema>;
export const SayInputSchema = z.strictObject({
  conversationId: z.string().min(1).describe('The id open_conversation returned.'),
  message: z.string().min(1).max(100_000).describe('What you say; the other agent’s reply is returned.'),
});
export type SayInput = z.infer<typeof SayInputSchema>;
export const ConversationIdInputSchema = z.strictObject({
  conversationId: z.string().min(1).describe('The id open_conversation returned.'),
});

/** What `say` returns: the other agent's reply, and any notes the user sent into the conversation. */
export interface ConversationReply {
  conversationId: string;
  reply: string;
  turn: number;
  turnsLeft: number;
  userNotes?: string[];
}

/** What `close_conversation` returns. */
export interface ConversationSummary {
  conversationId: string;
  role: string;
  turns: number;
  costUsd: number;
  durationMs: number;
  closedBecause: 'closed' | 'loop' | 'turn_limit' | 'killed' | 'undraft';
}
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
