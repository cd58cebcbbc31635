import type { Context } from '@opentelemetry/api';
import type { StreamEvent } from '../conversation/index.js';
import type { AgentBackend } from '../backends/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { SessionManager } from '../sessions/index.js';
import type { BackendInfo, GoalBudget, GoalJudge, GoalStatus } from '../protocol/index.js';
import type { DraftStore } from '../store/index.js';
import type {
  ApprovalDecision,
  ApprovalRequest,
  ApprovalResolution,
  Approver,
  PermissionMode,
  SandboxInfo,
} from '../workspace/index.js';
import type {
  AgentInfo,
  DraftStatus,
  DraftSummary,
  ProjectInfo,
  RoleFileError,
  RoleInfo,
  SubmitResult,
  TaskInfo,
} from './types.js';

/** The DraftService contract (helpers/DRAFT-SERVICE-CONTRACT.md): what the server codes against. */
export interface DraftServiceOptions {
  manager: SessionManager;
  /** The project folder `parley serve` runs in. */
  projectRoot: string;
  /** Its data folder (default `<projectRoot>/.parley`). */
  dataDir?: string;
  /**
   * Where projects, tasks, drafts and role files are kept; default: the file DraftStore over
   * `dataDir` (today's layout). A store passed in is the caller's: `close()` leaves it open.
   */
  draftStore?: DraftStore;
  /**
   * The back end for a role's `backend` and `model` (both optional). Default: the registry's
   * resolved default, the scripted back end offline. May throw for an unknown name.
   */
  backendFor?: (name?: string, model?: string) => AgentBackend;
  /** The back ends `listBackends` offers; default: every registered back end's name. */
  backendNames?: string[];
  /**
   * This server's name in draft leases (default: host name, pid and a random suffix). Servers that
   * share a DraftStore must use different names; the name is shown to a client on the wrong server.
   */
  leaseOwner?: string;
  /**
   * How long this server's lease on a draft lasts unless renewed (default 30 s; renewed every third of
   * it). After a server dies, another takes its drafts over once this has passed.
   */
  leaseTtlMs?: number;
  /** Cap on running workers across the service (default 2); more wait in a FIFO queue. */
  maxConcurrentWorkers?: number;
  /** Milliseconds since the epoch; injectable for deterministic tests. */
  clock?: () => number;
  /** Default wait of `await_agent` when the model gives none (default 300 s). */
  defaultAwaitTimeoutMs?: number;
  /**
   * Answers the workspace tools' approval requests in this process (a library user's policy). It
   * is asked as soon as a request is made; a client's `answer_permission` may still answer first.
   * Without one, requests wait for a client (`permission_requested`), however long that takes.
   */
  approver?: Approver;
  /** `auto` (default): run_command in bwrap when it works here; `none`: unconfined. */
  sandbox?: 'auto' | 'none';
}

/** What a client attaching to a channel needs to show approvals (`get_permissions`). */
export interface PermissionsView {
  /** The channel's draft session, when it has one. */
  sessionId?: string;
  mode?: PermissionMode;
  /** What confines commands in the draft's project. */
  sandbox?: SandboxInfo;
  /** Requests waiting in the channel's sessions (its draft, its workers, its dispatches), oldest first. */
  requests: ApprovalRequest[];
}

export interface DraftStatusNotice {
  channelId: string;
  sessionId: string;
  role: string;
  turnCount: number;
  costUsd: number;
  contextPct: number | null;
  /** ISO 8601. */
  lastActivity: string;
}

export interface DraftServiceEvents {
  /** Every event stored in a draft's session (user message, the turn's blocks, worker threads), after it is durable, in `seq` order. */
  channel_message: { channelId: string; sessionId: string; event: StreamEvent };
  /** After each turn (completed, failed or aborted). */
  draft_status: DraftStatusNotice;
  /** The back end compacted (`compact_boundary`) or Parley did (managed sessions). */
  context_compacted: { channelId: string; sessionId: string; preTokens: number; trigger: 'auto' | 'manual' };
  /** A worker or the drafted agent changed status. */
  agent_status: { channelId: string; agent: AgentInfo };
  /**
   * Additive beyond the contract: the draft was closed by Parley, not by `undraft`
   * (the native session could not be resumed). The channel is no longer in draft mode.
   */
  draft_closed: { channelId: string; sessionId: string; reason: 'native_resume_failed'; message: string };
  /** The draft's goal changed: set, judged after a turn, or ended (met, out of budget, stuck, stopped). */
  goal_status: { channelId: string; sessionId: string; goal: GoalStatus };
  /** A workspace tool of the channel's draft (or its worker, or dispatch) waits for approval. */
  permission_requested: { channelId: string; request: ApprovalRequest };
  /** A request was answered (by a client, the approver, a cancel). */
  permission_resolved: { channelId: string } & ApprovalResolution;
}

export interface SubmitOptions {
  traceParent?: Context;
}

export interface SubmitParams {
  channelId: string;
  content: string;
  /** Without a draft: dispatch the prompt to a worker of this role (not with `draft`). */
  role?: string;
  taskSlug?: string;
  backend?: string;
  /**
   * Without a draft: draft `role` (default: the project's default role) into `task` (default: a
   * new task titled after the message) first, then start the turn; the result's `drafted` says what
   * was made. With a draft the prompt goes to it. Not with `role` or `taskSlug`.
   */
  draft?: { project: string; role?: string; task?: string };
}

/** Drafts an agent by role on a task, runs its turns, dispatches workers and holds agent conversations. */
export interface DraftService {
  // projects, tasks, roles
  listProjects(): Promise<ProjectInfo[]>;
  createProject(params: { name: string; path?: string; description?: string }): Promise<ProjectInfo>;
  listTasks(params: { project: string }): Promise<TaskInfo[]>;
  createTask(params: { project: string; title: string; description?: string; slug?: string }): Promise<TaskInfo>;
  listRoles(params: { project?: string }): Promise<{ roles: RoleInfo[]; errors: RoleFileError[] }>;

  // drafts (seed 000), one per channel
  draft(params: {
    channelId: string;
    role: string;
    project: string;
    task: string;
  }): Promise<{ sessionId: string; taskSlug: string; project: string }>;
  undraft(params: { channelId: string }): Promise<DraftSummary>;
  getDraftStatus(params: { channelId: string }): Promise<{ active: boolean; session?: DraftStatus }>;
  /** The session of the channel's draft; NO_ACTIVE_DRAFT without one. Additive beyond the contract. */
  draftSessionId(channelId: string): string;
  /** The channel whose draft (or dispatch) runs the session on this server, if one does. Additive beyond the contract. */
  channelOfSession(sessionId: string): string | undefined;
  /** The back ends a draft may run on or move to (`submit_prompt { backend }`), the default marked. */
  listBackends(): BackendInfo[];
  /**
   * With an active draft: stores the user message, starts the turn and resolves once the message
   * is durable (the turn streams as `channel_message`); TURN_IN_PROGRESS while a turn runs.
   * Without one: the autonomous dispatch path (needs `role`), resolving with the DispatchResult.
   * `backend` (with an active draft): the draft's session continues on that back end from this
   * turn on (sessions/backend-move.ts); NO_ACTIVE_DRAFT without one.
   * `options.traceParent`: the OpenTelemetry context the turn's (or the dispatch's) spans go under,
   * such as the trace a client passed as `traceparent`.
   * `draft` (a UI's first message, draft-first-prompt.ts): without a draft, one is drafted first.
   * First prompts on a channel are taken one at a time, so two at once make one draft. A failed
   * step keeps its error's code; the message names the step, and `data.drafting` what was made.
   */
  submitPrompt(params: SubmitParams, options?: SubmitOptions): Promise<SubmitResult>;
  /** Aborts the running turn of the channel's draft; `cancelled: false` when none runs. */
  cancel(params: { channelId: string }): Promise<{ cancelled: boolean }>;
  listAgents(params: { channelId?: string }): Promise<AgentInfo[]>;
  killAgent(params: { agentId: string }): Promise<{ killed: boolean }>;
  /** The user's note into a conversation between agents (conversations.ts). */
  sayInConversation(params: {
    conversationId: string;
    message: string;
  }): Promise<{ conversationId: string; delivered: 'next_message' }>;

  /** Live notifications, in order. Returns the unsubscribe function. */
  on<K extends keyof DraftServiceEvents>(name: K, handler: (payload: DraftServiceEvents[K]) => void): () => void;

  /** Resolves once the channel's running turn (if any) has ended and its state is saved. Additive beyond the contract. */
  settled(params: { channelId: string }): Promise<void>;
  /**
   * The channel's draft's tools (gated by its role's permissions) as a real MCP server, for back ends
   * and clients that take MCP servers. Connect it to a transport; NO_ACTIVE_DRAFT without a draft.
   * Additive beyond the contract.
   */
  createMcpServer(params: { channelId: string }): Promise<McpServer>;

  // approvals of the workspace tools (draft-permissions.ts)
  /** Answers a waiting request; NOT_FOUND for an unknown or already answered one. Additive beyond the contract. */
  answerPermission(params: {
    sessionId: string;
    requestId: string;
    decision: ApprovalDecision;
  }): Promise<ApprovalResolution>;
  /**
   * The channel's draft's permission mode, its sandbox, and the requests waiting in its sessions
   * (with `all`, every request waiting in the service). Additive beyond the contract.
   */
  getPermissions(params: { channelId: string; all?: boolean }): Promise<PermissionsView>;
  /** Sets the channel's draft's permission mode (kept in draft.json); NO_ACTIVE_DRAFT without a draft. Additive beyond the contract. */
  setPermissionMode(params: {
    channelId: string;
    mode: PermissionMode;
  }): Promise<{ sessionId: string; mode: PermissionMode; previous: PermissionMode }>;

  // goals (goals.ts)
  /**
   * Sets a goal on the channel's draft and starts its first turn; after each turn the judge decides
   * whether the condition holds, and if not the draft goes on. INVALID_INPUT (nothing stored) for a
   * budget of zero or less, a judge command that cannot be found, a judge back end that does not
   * exist; GOAL_IN_PROGRESS while one runs; NO_ACTIVE_DRAFT without a draft.
   */
  setGoal(params: { channelId: string; condition: string; judge?: GoalJudge; budget: GoalBudget }): Promise<GoalStatus>;
  /** Stops the channel's goal: the running turn is cancelled and ends cleanly; NO_GOAL without one. */
  stopGoal(params: { channelId: string }): Promise<GoalStatus>;
  /** The goal of the channel's draft (running, or the last one that ended), if any. */
  getGoal(params: { channelId: string }): Promise<GoalStatus | undefined>;
  /** Resolves once the channel's goal has ended (or at once without one), with the goal. */
  goalSettled(params: { channelId: string }): Promise<GoalStatus | undefined>;

  /** Startup: finds active drafts (draft.json status active) so the next submit_prompt resumes them; a goal left open in a draft's log goes on. */
  recover(): Promise<{ recovered: number; failed: Array<{ sessionId: string; reason: string }> }>;
  /** Graceful shutdown: running turns end (aborted, system block), workers are killed, state saved; drafts stay active for `recover`. */
  close(): Promise<void>;
}
