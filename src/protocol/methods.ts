import * as z from 'zod';
import { ChatMessageSchema, StreamEventSchema } from '../conversation/index.js';
import {
  AgentInfoSchema,
  CheckpointSummarizerWireSchema,
  CheckpointWireSchema,
  DispatchResultSchema,
  DraftStatusSchema,
  ProjectInfoSchema,
  RoleFileErrorSchema,
  RoleInfoSchema,
  SessionIdParamSchema,
  SessionInfoSchema,
  TaskInfoSchema,
  WireIdSchema,
  PermissionDecisionSchema,
  PermissionModeWireSchema,
  PermissionRequestSchema,
  SandboxWireSchema,
  GoalBudgetSchema,
  GoalJudgeSchema,
  GoalStatusSchema,
} from './schemas.js';
import { RpcError } from './errors.js';
import {
  GetNotificationSettingsParamsSchema,
  GetNotificationSettingsResultSchema,
  SendTestNotificationParamsSchema,
  SendTestNotificationResultSchema,
} from './attention-schemas.js';
import {
  EditMessageParamsSchema,
  EditMessageResultSchema,
  ListBranchesParamsSchema,
  ListBranchesResultSchema,
  RestoreCheckpointParamsSchema,
  RestoreCheckpointResultSchema,
  RewindParamsSchema,
  RewindResultSchema,
  SwitchBranchParamsSchema,
  SwitchBranchResultSchema,
} from './history-schemas.js';
import { PromptIdSchema, RunIdSchema, RunStatusWireSchema, RunWireSchema } from './run-schemas.js';
import {
  AddScheduleParamsSchema,
  GetScheduleParamsSchema,
  GetScheduleResultSchema,
  ListSchedulesResultSchema,
  RemoveScheduleResultSchema,
  ScheduleParamsSchema,
  ScheduleResultSchema,
} from './schedule-schemas.js';

/**
 * Every method the server answers: its params and result schemas. Params are strict objects
 * (an unknown key is a mistake worth reporting); results are what the server promises to send.
 * The channel a draft belongs to is the connection's (the `channel` query parameter), never a param.
 */

const NoParams = z.strictObject({}).describe('No params (`{}` or omitted).');

// ---- seed 000: drafts ----------------------------------------------------------------------------

export const DraftParamsSchema = z.strictObject({
  role: WireIdSchema.describe('Role name (see `list_roles`).'),
  project: WireIdSchema.describe('Project name (see `list_projects`).'),
  task: WireIdSchema.describe('Task slug (see `list_tasks`).'),
  /** Go on in this session instead of starting a new one: a fork of the task's draft (`fork_session`), of the same project and task, archived not, drafted nowhere. */
  session: SessionIdParamSchema.optional(),
});
export const DraftResultSchema = z.object({ sessionId: z.string(), taskSlug: z.string(), project: z.string() });

export const UndraftParamsSchema = NoParams;
export const UndraftResultSchema = z.object({
  sessionId: z.string(),
  taskSlug: z.string(),
  turns: z.number().int().nonnegative(),
  /** US dollars, the whole session. */
  cost: z.number().nonnegative(),
  durationMs: z.number().nonnegative().optional(),
});

export const GetDraftStatusParamsSchema = NoParams;
export const GetDraftStatusResultSchema = z.object({ active: z.boolean(), session: DraftStatusSchema.optional() });

export const SubmitPromptParamsSchema = z.strictObject({
  content: z.string().min(1).max(500_000),
  /** Ignored while a draft is active (the draft owns routing). */
  role: WireIdSchema.optional(),
  taskSlug: WireIdSchema.optional(),
  /** W3C trace context: the turn's spans join this trace (`00-<trace id>-<span id>-<flags>`). */
  traceparent: z
    .string()
    .regex(
      /^[\da-f]{2}-[\da-f]{32}-[\da-f]{16}-[\da-f]{2}$/,
      'a W3C traceparent: 00-<32 hex trace id>-<16 hex span id>-<2 hex flags>',
    )
    .optional(),
  tracestate: z.string().max(512).optional(),
  backend: z
    .string()
    .min(1)
    .max(200)
    .optional()
    .describe(
      "with an active draft: continue its session on this back end from this prompt on (a native one resumes a transcript Parley writes from the session's log; a system block says what was converted). Needs an active draft (or `draft`)",
    ),
  draft: z
    .strictObject({
      project: WireIdSchema.describe('Project name (see `list_projects`).'),
      role: WireIdSchema.optional().describe("Role to draft; default: the project's `defaultRole`."),
      task: WireIdSchema.optional().describe('Task slug to draft into; default: a new task titled after the message.'),
    })
    .optional()
    .describe(
      "when the channel has no draft: draft `role` into `task` of `project` first, then start the turn (a UI's first message). First messages on one channel are taken one at a time, so two make one draft. Ignored while a draft is active; not with `role`",
    ),
});
/**
 * `data.drafting` of a `submit_prompt { draft }` error: the step that failed (`project`, `task`,
 * `draft`, or `submit` once the draft is made) and what was made before it (a created task stays).
 */
export const DraftingErrorDataSchema = z.object({
  step: z.enum(['project', 'task', 'draft', 'submit']),
  project: z.string(),
  role: z.string().optional(),
  taskSlug: z.string().optional(),
  createdTask: z.boolean(),
  sessionId: z.string().optional(),
});
export type DraftingErrorData = z.infer<typeof DraftingErrorDataSchema>;

/** A `submit_prompt { draft }` failure's `data.drafting`, when the error is one. */
export function draftingOf(error: unknown): DraftingErrorData | undefined {
  if (!(error instanceof RpcError)) return undefined;
  const parsed = DraftingErrorDataSchema.safeParse(error.data['drafting']);
  return parsed.success ? parsed.data : undefined;
}

/** What a `submit_prompt { draft }` drafted before its turn: absent when the channel already had a draft. */
const DraftedSchema = z.object({
  role: z.string(),
  project: z.string(),
  taskSlug: z.string(),
  /** True when the task was made for this message (no `draft.task` given). */
  createdTask: z.boolean(),
});
/**
 * With an active draft the turn is accepted and streams as `channel_message` notifications;
 * without one the autonomous dispatch path runs and answers with the structured result.
 */
export const SubmitPromptResultSchema = z.discriminatedUnion('mode', [
  z.object({
    mode: z.literal('draft'),
    accepted: z.literal(true),
    sessionId: z.string(),
    /** The `seq` of the stored user message: acknowledged, it survives any crash from here on. */
    seq: z.number().int().nonnegative(),
    drafted: DraftedSchema.optional(),
  }),
  z.object({ mode: z.literal('dispatch'), sessionId: z.string(), result: DispatchResultSchema }),
]);

export const CancelParamsSchema = NoParams;
export const CancelResultSchema = z.object({ cancelled: z.boolean() });

// ---- projects, tasks, roles ----------------------------------------------------------------------

export const ListProjectsParamsSchema = NoParams;
export const ListProjectsResultSchema = z.object({ projects: z.array(ProjectInfoSchema) });

export const CreateProjectParamsSchema = z.strictObject({
  name: WireIdSchema,
  path: z.string().min(1).max(4096).optional(),
  description: z.string().max(10_000).optional(),
});
export const CreateProjectResultSchema = z.object({ project: ProjectInfoSchema });

export const ListTasksParamsSchema = z.strictObject({ project: WireIdSchema });
export const ListTasksResultSchema = z.object({ tasks: z.array(TaskInfoSchema) });

export const CreateTaskParamsSchema = z.strictObject({
  project: WireIdSchema,
  title: z.string().min(1).max(500),
  description: z.string().max(100_000).optional(),
  slug: WireIdSchema.optional(),
});
export const CreateTaskResultSchema = z.object({ task: TaskInfoSchema });

export const ListRolesParamsSchema = z.strictObject({ project: WireIdSchema.optional() });
export const ListRolesResultSchema = z.object({ roles: z.array(RoleInfoSchema), errors: z.array(RoleFileErrorSchema) });

// ---- sessions --------------------------------------------------------------------------------

export const ListSessionsParamsSchema = z.strictObject({
  status: z.enum(['active', 'archived']).optional(),
  agentType: z.string().min(1).max(200).optional(),
  /** Back end: `scripted`, `claude-sdk`, … */
  backend: z.string().min(1).max(200).optional(),
  scopeKind: z.enum(['feature', 'task', 'draft', 'workflow', 'imported']).optional(),
  featureId: z.string().min(1).max(200).optional(),
  taskId: z.string().min(1).max(200).optional(),
  taskState: z.string().min(1).max(200).optional(),
  /** Only sessions carrying this tag. */
  tag: z.string().min(1).max(40).optional(),
  /** Only pinned sessions (true) or only unpinned ones (false). */
  pinned: z.boolean().optional(),
  /** `nextCursor` of the page before: the page after it (without `search`). */
  cursor: z.string().min(1).max(500).optional(),
  /** Case-insensitive text in the id, title, agent type, role or task: reads every record (use `search_sessions` for the messages). */
  search: z.string().min(1).max(500).optional(),
  /** Also match `search` in the session's content: messages, thinking, tool calls and results, worker threads (reads each candidate's log). */
  searchContent: z.boolean().optional(),
  limit: z.number().int().positive().max(10_000).optional(),
});
export const ListSessionsResultSchema = z.object({
  sessions: z.array(SessionInfoSchema),
  nextCursor: z.string().optional().describe('pass it as `cursor` for the next page; absent after the last page'),
});

export const SearchSessionsParamsSchema = z.strictObject({
  /** Words; a message matches when it holds every one. Letters and digits in any script; anything else separates words. */
  query: z.string().max(10_000),
  limit: z.number().int().positive().max(100).optional(),
});
export const SessionSearchHitSchema = z.object({
  sessionId: z.string(),
  /** The `seq` of the event holding the message: open the session there. */
  seq: z.number().int().nonnegative(),
  blockId: z.string(),
  conversationId: z.string(),
  role: z.enum(['user', 'assistant']),
  snippet: z.string(),
  at: z.number().int().nonnegative(),
  /** The session's title, when it has one. */
  title: z.string().optional(),
});
export type SessionSearchHitInfo = z.infer<typeof SessionSearchHitSchema>;
export const SearchSessionsResultSchema = z.object({
  hits: z.array(SessionSearchHitSchema),
  /** The words searched for, as the index reads them (lower case); empty when the query held none. */
  terms: z.array(z.string()),
});

export const UpdateSessionParamsSchema = z.strictObject({
  sessionId: SessionIdParamSchema,
  /** A new title (1 to 200 characters). */
  title: z.string().trim().min(1).max(200).optional(),
  /** Tags to add and to remove. */
  addTags: z.array(z.string().max(100)).max(20).optional(),
  removeTags: z.array(z.string().max(100)).max(20).optional(),
  pinned: z.boolean().optional(),
});
export const UpdateSessionResultSchema = z.object({ session: SessionInfoSchema });

export const SessionParamsSchema = z.strictObject({ sessionId: SessionIdParamSchema });

const CompactionTriggerSchema = z.enum(['auto', 'manual']);

/** A compaction that is running: a client that connects after `compaction_started` learns of it here. */
export const RunningCompactionSchema = z.object({
  startedAt: z.string().describe('ISO 8601: when the compaction was asked for'),
  trigger: CompactionTriggerSchema,
  tokensBefore: z
    .number()
    .nonnegative()
    .optional()
    .describe('tokens of the request being compacted; absent until the history is read'),
  summarizer: CheckpointSummarizerWireSchema.optional().describe(
    'who is writing the checkpoint: the model, or the structural builder',
  ),
});
export type RunningCompaction = z.infer<typeof RunningCompactionSchema>;

export const GetSessionParamsSchema = SessionParamsSchema;
export const GetSessionResultSchema = z.object({
  session: SessionInfoSchema,
  lastSeq: z.number().int().min(-1),
  compaction: RunningCompactionSchema.optional().describe(
    'the compaction running for the session; absent when none runs',
  ),
});

export const GetCompactionStatusParamsSchema = SessionParamsSchema;
export const GetCompactionStatusResultSchema = z.object({
  running: z.boolean(),
  startedAt: z.string().optional().describe('ISO 8601; present while running'),
  trigger: CompactionTriggerSchema.optional().describe('present while running'),
  tokensBefore: z.number().nonnegative().optional().describe('present while running, once the history is read'),
  summarizer: CheckpointSummarizerWireSchema.optional().describe(
    'present while running: who is writing the checkpoint',
  ),
  /** Failed compactions in a row, reset by a success of the configured summarizer. */
  consecutiveFailures: z.number().int().nonnegative(),
  /** Automatic compaction stopped after repeated failures (force_compact still works). */
  autoCompactionStopped: z.boolean(),
  /** Automatic compaction builds checkpoints structurally because the model summarizer failed repeatedly. */
  structuralFallback: z.boolean(),
});

export const GetMessagesParamsSchema = z.strictObject({
  sessionId: SessionIdParamSchema,
  /** Newest messages kept (default 50). */
  limit: z.number().int().positive().max(10_000).optional(),
  /** Include messages hidden by `clear_messages`. */
  includeCleared: z.boolean().optional(),
});
export const GetMessagesResultSchema = z.object({ messages: z.array(ChatMessageSchema) });

export const GetCheckpointParamsSchema = SessionParamsSchema;
export const GetCheckpointResultSchema = z.object({
  /** The newest version, null before the first compaction. */
  current: CheckpointWireSchema.nullable(),
  /** Every version, oldest first. */
  versions: z.array(CheckpointWireSchema),
});

export const ClearMessagesParamsSchema = SessionParamsSchema;
export const ClearMessagesResultSchema = z.object({ session: SessionInfoSchema });

export const GetEventsParamsSchema = z
  .strictObject({
    sessionId: SessionIdParamSchema,
    /** Events with a greater `seq` (default -1: the whole log). */
    afterSeq: z.number().int().min(-1).optional(),
    /**
     * Read from the end: the newest `limit` events with a smaller `seq` (and greater than `afterSeq`
     * when given), oldest first, and `hasMore` says whether older ones remain. A seq past the end
     * (`lastSeq + 1`, or 9007199254740991 when it is not known) reads the log's last page; page back
     * with `beforeSeq` = the first `seq` returned.
     */
    beforeSeq: z.number().int().min(0).optional(),
    /** At most this many (default and maximum 5,000); page on with `afterSeq` = the last `seq`. */
    limit: z.number().int().positive().max(5_000).optional(),
  })
  .refine(
    (params) => params.beforeSeq === undefined || params.afterSeq === undefined || params.beforeSeq > params.afterSeq,
    {
      path: ['beforeSeq'],
      message:
        'must be more than afterSeq (no seq lies below beforeSeq and above afterSeq): ask for the events before a seq above afterSeq, or leave one of the two out',
    },
  );
export const GetEventsResultSchema = z.object({
  events: z.array(StreamEventSchema),
  /** The newest `seq` in the log when the page was read. */
  lastSeq: z.number().int().min(-1),
  /** More events follow the last one returned; with `beforeSeq`, more events come before the first one returned. */
  hasMore: z.boolean(),
});

export const SubscribeParamsSchema = z.strictObject({
  /** Sessions to follow; omitted: every session. */
  sessionIds: z.array(SessionIdParamSchema).max(1_000).optional(),
  /**
   * False: follow their notices only (`session_updated`, `compaction_*`), not every `session_event`
   * (a session list, or a client that gets its draft's events as `channel_message`). A session
   * already followed with its events stays so. Omitted: true (notices and events).
   */
  events: z.boolean().optional(),
});
export const SubscriptionResultSchema = z.object({
  /** True while this connection follows every session with its events. */
  all: z.boolean(),
  /** The sessions it follows with their events. */
  sessionIds: z.array(z.string()),
  /** What it follows for notices only (`events: false`); absent from servers before it. */
  notices: z.object({ all: z.boolean(), sessionIds: z.array(z.string()) }).optional(),
});
export const UnsubscribeParamsSchema = z.strictObject({
  /** Sessions to stop following; omitted: all of them (and `all`). */
  sessionIds: z.array(SessionIdParamSchema).max(1_000).optional(),
});

export const ForceCompactParamsSchema = z.strictObject({
  sessionId: SessionIdParamSchema,
  /** Extra guidance for the summary. */
  instructions: z.string().max(10_000).optional(),
});
export const ForceCompactResultSchema = z.looseObject({
  compacted: z.boolean(),
  checkpoint: CheckpointWireSchema.optional(),
});

export const PreviewRequestParamsSchema = z.strictObject({
  sessionId: SessionIdParamSchema,
  /** The next user message to preview with (default empty). */
  prompt: z.string().max(500_000).optional(),
});
export const PreviewRequestResultSchema = z.looseObject({
  systemPrompt: z.string(),
  userPrompt: z.string(),
  /** Calibrated tokens of the whole request. */
  totalTokens: z.number().nonnegative(),
  /** The tokenizer's own count, before calibration. */
  estimatedTokens: z.number().nonnegative().optional(),
  /** The token budget and the compaction threshold, in tokens. */
  budget: z.number().nonnegative().optional(),
  threshold: z.number().nonnegative().optional(),
  /** Tokens per section: role, context, checkpoint, conversation, userPrompt. */
  sections: z.record(z.string(), z.number()).optional(),
});

export const ForkSessionParamsSchema = z.strictObject({
  sessionId: SessionIdParamSchema,
  /** The last point the fork keeps: a `seq` of the source's log, or a block id (default: the end). */
  at: z.union([z.number().int().nonnegative(), z.string().min(1).max(200)]).optional(),
  /** The back end the fork continues on (default: the source's); one of `list_backends`, available. */
  backend: z.string().min(1).max(200).optional(),
});
export const ForkSessionResultSchema = z.object({ session: SessionInfoSchema });

export const ArchiveSessionParamsSchema = SessionParamsSchema;
export const ArchiveSessionResultSchema = z.object({ session: SessionInfoSchema });

// ---- agents ----------------------------------------------------------------------------------

export const ListAgentsParamsSchema = z.strictObject({
  /** Every channel's workers, not only this channel's. */
  all: z.boolean().optional(),
});
export const ListAgentsResultSchema = z.object({ agents: z.array(AgentInfoSchema) });

export const KillAgentParamsSchema = z.strictObject({ agentId: WireIdSchema });
export const KillAgentResultSchema = z.object({ killed: z.boolean() });
/** The user steps into a conversation between agents (its id is its thread's `conversationId`). */
export const SayInConversationParamsSchema = z.strictObject({
  conversationId: WireIdSchema,
  message: z.string().min(1).max(100_000),
});
export const SayInConversationResultSchema = z.object({
  conversationId: z.string(),
  delivered: z.literal('next_message'),
});

// ---- server --------------------------------------------------------------------------------

// ---- approvals of the workspace tools --------------------------------------------------------------

export const AnswerPermissionParamsSchema = z.strictObject({
  sessionId: z.string().min(1).max(200),
  requestId: z.string().min(1).max(200),
  decision: PermissionDecisionSchema,
});
export const AnswerPermissionResultSchema = z.object({
  requestId: z.string(),
  sessionId: z.string(),
  decision: PermissionDecisionSchema,
});

export const GetPermissionsParamsSchema = z
  .strictObject({
    all: z
      .boolean()
      .optional()
      .describe(
        "Every channel's waiting requests, not only this channel's; from then on this connection also receives every channel's `permission_requested` and `permission_resolved` (what a phone shows: everything that waits for its person).",
      ),
  })
  .describe('`{}` or omitted: this channel only.');
export const GetPermissionsResultSchema = z.object({
  sessionId: z.string().optional().describe("The channel's draft session; absent without a draft."),
  mode: PermissionModeWireSchema.optional().describe("The draft's permission mode."),
  sandbox: SandboxWireSchema.optional(),
  requests: z.array(PermissionRequestSchema).describe("Requests waiting in the channel's sessions, oldest first."),
});

export const SetPermissionModeParamsSchema = z.strictObject({ mode: PermissionModeWireSchema });
export const SetPermissionModeResultSchema = z.object({
  sessionId: z.string(),
  mode: PermissionModeWireSchema,
  previous: PermissionModeWireSchema,
});

// ---- paired devices -----------------------------------------------------------------------

export const DeviceIdSchema = z
  .string()
  .regex(/^dev-[0-9a-f]{12}$/, 'a device id is "dev-" and 12 hex digits (see `list_devices`)');
export const DeviceInfoWireSchema = z.object({
  deviceId: z.string(),
  name: z.string(),
  /** ISO 8601. */
  pairedAt: z.string(),
  /** ISO 8601: when it last connected or disconnected; absent until it first connects. */
  lastSeenAt: z.string().optional(),
  /** Its connections open now. */
  connections: z.number().int().nonnegative(),
});
/** A paired device as `list_devices` shows it. */
export type DeviceInfoWire = z.infer<typeof DeviceInfoWireSchema>;

export const CreatePairingParamsSchema = NoParams;
export const CreatePairingResultSchema = z.object({
  code: z.string().describe('The one-time code; every link carries it.'),
  expiresAt: z.string().describe('ISO 8601: the code is refused after this.'),
  links: z
    .array(z.string())
    .min(1)
    .describe(
      "The web UI's address with `#pair=<code>`, once per address the server is reached by, the network's first.",
    ),
  reachable: z.boolean().describe('False when the server listens on loopback only: a phone cannot reach it.'),
  tlsFingerprint: z
    .string()
    .optional()
    .describe("The SHA-256 fingerprint of the server's TLS certificate, to compare."),
});
export const ListDevicesParamsSchema = NoParams;
export const ListDevicesResultSchema = z.object({ devices: z.array(DeviceInfoWireSchema) });
export const RevokeDeviceParamsSchema = z.strictObject({ deviceId: DeviceIdSchema });
export const RevokeDeviceResultSchema = z.object({
  device: DeviceInfoWireSchema,
  closedConnections: z.number().int().nonnegative(),
});
export const SetGoalParamsSchema = z.strictObject({
  condition: z.string().trim().min(1).max(8_000).describe('What must hold for the goal to be met, in words.'),
  judge: GoalJudgeSchema.optional().describe("Who decides: a model (default: the draft's own back end) or a command."),
  budget: GoalBudgetSchema,
});
export const GoalResultSchema = z.object({ goal: GoalStatusSchema });
export const GetGoalResultSchema = z.object({ goal: GoalStatusSchema.optional() });

export const ListBackendsParamsSchema = NoParams;
export const BackendInfoSchema = z.object({
  name: z.string(),
  /** `native`: the back end keeps its own session (a CLI's transcript); `managed`: Parley sends the history. */
  continuity: z.enum(['managed', 'native']).optional(),
  /** The back end new drafts run on. */
  default: z.boolean(),
  /** False when this server cannot make it (not configured here); `reason` says why. */
  available: z.boolean(),
  reason: z.string().optional(),
});
/** A back end as `list_backends` shows it: its name, whether it is installed and configured, its models. */
export type BackendInfo = z.infer<typeof BackendInfoSchema>;
export const ListBackendsResultSchema = z.object({ backends: z.array(BackendInfoSchema) });

export const ServerInfoParamsSchema = NoParams;
export const ServerInfoResultSchema = z.object({
  name: z.literal('parley'),
  version: z.string(),
  protocolVersion: z.number().int().positive(),
  /** This connection's channel (the one named in the URL, or the one the server made for it). */
  channelId: z.string(),
  connectionId: z.string(),
  projectRoot: z.string(),
  methods: z.array(z.string()),
  /** The server snapshots the project's files around turns, so `rewind` can restore them (absent: an older server, read as no). */
  fileSnapshots: z.boolean().optional(),
});

// ---- durable runs ---------------------------------------------------------------------

export const ListRunsParamsSchema = z.strictObject({
  /** Only the runs of this project. */
  project: WireIdSchema.optional(),
  /** Only runs in one of these states. */
  status: z.array(RunStatusWireSchema).min(1).max(6).optional(),
  /** At most this many, newest first. */
  limit: z.number().int().positive().max(10_000).optional(),
});
export const ListRunsResultSchema = z.object({ runs: z.array(RunWireSchema).describe('newest first') });

export const RunParamsSchema = z.strictObject({ runId: RunIdSchema });
export const RunResultSchema = z.object({ run: RunWireSchema });

export const StartRunParamsSchema = z.strictObject({
  workflow: z
    .string()
    .min(1)
    .max(4096)
    .describe(
      'A workflow module under the project (relative to its root), or a workflow named in `parley.config.json`.',
    ),
  input: z.unknown().optional().describe('The harness input, any JSON.'),
  project: WireIdSchema.optional().describe("The project the run belongs to (default: the server's)."),
});

export const AnswerPromptParamsSchema = z.strictObject({
  runId: RunIdSchema,
  promptId: PromptIdSchema,
  /** The answer: the text, or one of the prompt's choices (by text or 1-based number). */
  response: z.string().max(100_000),
});
/** Accepted, or refused by the prompt's choices or validator (with its message); a refused prompt keeps waiting. */
export const AnswerPromptResultSchema = z.discriminatedUnion('accepted', [
  z.object({ accepted: z.literal(true) }),
  z.object({
    accepted: z.literal(false),
    message: z.string().describe("the validator's message: why the answer was refused"),
  }),
]);

export const SendToRunParamsSchema = z.strictObject({
  runId: RunIdSchema,
  message: z.string().min(1).max(500_000),
  /** The agent's name (`sendTo`); omitted: the agent running now, or the next one (`send`). */
  agent: z.string().min(1).max(200).optional(),
});
export const SendToRunResultSchema = z.object({ sent: z.literal(true) });

export const ForkRunParamsSchema = z.strictObject({
  runId: RunIdSchema,
  atStep: z
    .number()
    .int()
    .nonnegative()
    .describe("The last step of the run's journal (its seq, from 0) the fork replays; it goes on live after it."),
  answer: z
    .string()
    .max(100_000)
    .optional()
    .describe(
      'The answer the fork gives the question at `atStep` (its prompt, reply or timeout) in place of the journaled one.',
    ),
});

export const AbortRunParamsSchema = z.strictObject({ runId: RunIdSchema, reason: z.string().max(2_000).optional() });

export const SubscribeRunsParamsSchema = z.strictObject({
  /** Runs to follow; omitted: every run. */
  runIds: z.array(RunIdSchema).max(1_000).optional(),
  /** Also send `run_event`: every event of the followed runs, agent output included (many). Omitted: as before (default false). */
  events: z.boolean().optional(),
});
export const RunSubscriptionResultSchema = z.object({
  /** True while this connection follows every run. */
  all: z.boolean(),
  runIds: z.array(z.string()),
  /** True while this connection also receives `run_event`. */
  events: z.boolean(),
});
export const UnsubscribeRunsParamsSchema = z.strictObject({
  /** Runs to stop following; omitted: all of them (and `all`). */
  runIds: z.array(RunIdSchema).max(1_000).optional(),
});

/** One method of the protocol: its params and result schemas and description. */
export interface MethodSpec<P extends z.ZodType = z.ZodType, R extends z.ZodType = z.ZodType> {
  params: P;
  result: R;
  description: string;
}

function method<P extends z.ZodType, R extends z.ZodType>(params: P, result: R, description: string): MethodSpec<P, R> {
  return { params, result, description };
}

/** The method table: name → params and result schemas. The server's dispatcher and the client both read it. */
export const methods = {
  draft: method(
    DraftParamsSchema,
    DraftResultSchema,
    "Seed 000: drafts an agent by role into an existing task, on this connection's channel. -32004 if the channel already has a draft; -32001 if the project, task or role is not found.",
  ),
  undraft: method(
    UndraftParamsSchema,
    UndraftResultSchema,
    "Seed 000: closes the channel's draft and returns its summary. -32005 if there is none.",
  ),
  get_draft_status: method(
    GetDraftStatusParamsSchema,
    GetDraftStatusResultSchema,
    "Seed 000: the channel's draft and its metrics; `active: false` without one.",
  ),
  submit_prompt: method(
    SubmitPromptParamsSchema,
    SubmitPromptResultSchema,
    'Seed 000: with an active draft, starts a turn (it streams as `channel_message`, then `draft_status`); without one, runs the autonomous dispatch path and answers with its structured result, or with `draft` drafts an agent first and answers with `drafted`. -32006 while a turn runs. A `draft` step that fails keeps its code; its message names the step and `data.drafting` says which (`project`, `task`, `draft`, `submit`) and what was made.',
  ),
  cancel: method(
    CancelParamsSchema,
    CancelResultSchema,
    "Interrupts the channel's running turn: it ends cleanly with a system block, state is saved.",
  ),
  list_projects: method(ListProjectsParamsSchema, ListProjectsResultSchema, 'Projects this server knows.'),
  create_project: method(CreateProjectParamsSchema, CreateProjectResultSchema, 'Registers a project (a folder).'),
  list_tasks: method(ListTasksParamsSchema, ListTasksResultSchema, "A project's tasks."),
  create_task: method(
    CreateTaskParamsSchema,
    CreateTaskResultSchema,
    'Creates a task in a project; the slug is derived from the title unless given.',
  ),
  list_roles: method(
    ListRolesParamsSchema,
    ListRolesResultSchema,
    "Built-in roles and the project's role files; a malformed file is listed in `errors` with the file and field.",
  ),
  list_sessions: method(
    ListSessionsParamsSchema,
    ListSessionsResultSchema,
    "Sessions matching every given filter, pinned first, then the most recently active: a page of `limit` (default 50, at most 1,000) served by the store's index, with `nextCursor` for the next page. A cursor stays valid while sessions change: no session is repeated, none that did not change is skipped. With `search`, every record is read and matched instead (no cursor).",
  ),
  search_sessions: method(
    SearchSessionsParamsSchema,
    SearchSessionsResultSchema,
    "Full-text search over every message of every session, through the store's index: the newest messages holding every word, each with its session, `seq`, block and a snippet. -32602 for an empty query or one over 1,000 characters or 16 words; a query with no letters or digits finds nothing.",
  ),
  update_session: method(
    UpdateSessionParamsSchema,
    UpdateSessionResultSchema,
    'Renames, tags or pins a session (any of `title`, `addTags`, `removeTags`, `pinned`); followers get `session_updated`. -32602 for a bad tag.',
  ),
  get_session: method(
    GetSessionParamsSchema,
    GetSessionResultSchema,
    "A session's metadata, metrics, newest `seq`, and the compaction running for it (if any).",
  ),
  get_compaction_status: method(
    GetCompactionStatusParamsSchema,
    GetCompactionStatusResultSchema,
    'Whether a compaction of the session runs (since when, why, who writes it), its failures in a row, and whether automatic compaction is stopped or falls back to the structural builder.',
  ),
  get_messages: method(
    GetMessagesParamsSchema,
    GetMessagesResultSchema,
    'The newest messages of a session (user and assistant text), oldest first.',
  ),
  get_checkpoint: method(
    GetCheckpointParamsSchema,
    GetCheckpointResultSchema,
    'The current checkpoint and every version.',
  ),
  clear_messages: method(
    ClearMessagesParamsSchema,
    ClearMessagesResultSchema,
    'The next request starts from the checkpoint; history stays readable.',
  ),
  get_events: method(
    GetEventsParamsSchema,
    GetEventsResultSchema,
    'The log after a `seq` (a client that reconnects asks for what it missed), or with `beforeSeq` its newest events before one, a page at a time from the end (a client that opens a long session at its tail).',
  ),
  subscribe: method(
    SubscribeParamsSchema,
    SubscriptionResultSchema,
    'Follows sessions (or all): `session_updated`, `session_event` and `compaction_*` notifications; with `events: false`, all but `session_event`.',
  ),
  unsubscribe: method(UnsubscribeParamsSchema, SubscriptionResultSchema, 'Stops following sessions (or all).'),
  force_compact: method(
    ForceCompactParamsSchema,
    ForceCompactResultSchema,
    'Compacts a managed session now. -32007 on a native back end; -32009 while a compaction runs.',
  ),
  preview_request: method(
    PreviewRequestParamsSchema,
    PreviewRequestResultSchema,
    'The request the next turn would send (managed sessions): system prompt, user prompt, tokens.',
  ),
  fork_session: method(
    ForkSessionParamsSchema,
    ForkSessionResultSchema,
    "A new session whose history is the source's up to `at` (a seq or a block id; default the end), with `forkedFrom { sessionId, seq }`; the source is unchanged. It runs on `backend` (default the source's). -32001 for an unknown session or a point it does not have (FORK_POINT_NOT_FOUND); -32602 for a back end this server does not know, -32007 for one it cannot make.",
  ),
  rewind: method(
    RewindParamsSchema,
    RewindResultSchema,
    "Takes the session back to `to` (a seq or a block id of its active branch, kept), restoring the conversation (default), the project's files, or both. Nothing is deleted: what came after stays as the branch that was left (`list_branches`); the next turn starts a new branch, holds nothing past the point, uses the checkpoint current at it, and a native back end resumes from a transcript of the active branch. Sends `history_changed`. -32001 for a point not on the active branch (FORK_POINT_NOT_FOUND); -32006 while a turn runs (cancel it first); -32007 for files on a server with no file snapshots (FILE_SNAPSHOTS_NOT_CONFIGURED); -32009 when the files the user changed since would be overwritten (RESTORE_CONFLICT, `data.files` lists them; ask again with `overwrite`), changing nothing.",
  ),
  edit_message: method(
    EditMessageParamsSchema,
    EditMessageResultSchema,
    "Edits a user message of the channel's draft and resends it: a new branch starts just before that message and `content` is sent there as a turn (it streams as `submit_prompt`'s does). The old message and what followed stay as the branch that was left. Sends `history_changed`. -32005 without a draft; -32001 for a block not on the active branch; -32602 for a block that is not a user message; -32006 while a turn runs.",
  ),
  list_branches: method(
    ListBranchesParamsSchema,
    ListBranchesResultSchema,
    "Every branch of the session's history tree, oldest first: its id, where it forks (`forkSeq`), its tip, last message, time, turns and cost, and which is active.",
  ),
  switch_branch: method(
    SwitchBranchParamsSchema,
    SwitchBranchResultSchema,
    'Makes a branch of `list_branches` the active one; the others stay. Sends `history_changed`. -32001 for a branch the session does not have (BRANCH_NOT_FOUND); -32006 while a turn runs.',
  ),
  restore_checkpoint: method(
    RestoreCheckpointParamsSchema,
    RestoreCheckpointResultSchema,
    'Makes an older checkpoint version current again: a new version copying it (`restoredFrom`); none is deleted. -32001 for a version the session does not have (CHECKPOINT_NOT_FOUND); -32009 for one that summarizes a branch that is not active (CHECKPOINT_NOT_ON_BRANCH).',
  ),
  archive_session: method(
    ArchiveSessionParamsSchema,
    ArchiveSessionResultSchema,
    'Archives a session; it stays readable and takes no new messages.',
  ),
  list_agents: method(ListAgentsParamsSchema, ListAgentsResultSchema, 'Worker agents of this channel (or all).'),
  kill_agent: method(KillAgentParamsSchema, KillAgentResultSchema, 'Stops a worker agent.'),
  answer_permission: method(
    AnswerPermissionParamsSchema,
    AnswerPermissionResultSchema,
    "Answers a workspace tool's approval request (`permission_requested`): `allow_once`, `allow_always` (remembered for the session under the request's `allowAlwaysScope`) or `deny` (nothing changes; the model is told the user denied it). The first answer wins; -32001 for an unknown, cancelled or already answered request. Any client of the server may answer.",
  ),
  get_permissions: method(
    GetPermissionsParamsSchema,
    GetPermissionsResultSchema,
    "The channel's draft's permission mode, the command sandbox, and the approval requests waiting in the channel's sessions (with `all: true`, in every channel's, and every channel's approval notifications from then on): what a client shows when it attaches.",
  ),
  set_permission_mode: method(
    SetPermissionModeParamsSchema,
    SetPermissionModeResultSchema,
    "Sets the channel's draft's permission mode (kept with the draft; applies from the next tool call). -32005 without a draft.",
  ),
  get_notification_settings: method(
    GetNotificationSettingsParamsSchema,
    GetNotificationSettingsResultSchema,
    'Where this server sends notifications of what waits for a person (webhooks by origin only, the desktop, hooks, the web UI), with its grace delay and coalescing window.',
  ),
  send_test_notification: method(
    SendTestNotificationParamsSchema,
    SendTestNotificationResultSchema,
    'Sends a test notification through every sink at once (no grace delay, no coalescing) and says what each did: for checking that a phone or a chat receives them.',
  ),
  create_pairing: method(
    CreatePairingParamsSchema,
    CreatePairingResultSchema,
    "A one-time pairing code and the links that carry it (`parley pair`): a phone that opens one trades the code at `POST /pair` for a device token of its own. Codes expire in minutes and work once. Needs the server's own token: -32011 (NOT_ALLOWED) from a device.",
  ),
  list_devices: method(
    ListDevicesParamsSchema,
    ListDevicesResultSchema,
    "The paired devices, with when each was last seen and its connections open now. Needs the server's own token: -32011 (NOT_ALLOWED) from a device.",
  ),
  revoke_device: method(
    RevokeDeviceParamsSchema,
    RevokeDeviceResultSchema,
    'Forgets a paired device: its token is refused from now on and its open connections close at once (1008). -32001 (DEVICE_NOT_FOUND) for an id not paired; -32011 (NOT_ALLOWED) from a device.',
  ),
  set_goal: method(
    SetGoalParamsSchema,
    GoalResultSchema,
    "Sets a goal on the channel's draft and starts its first turn. After each turn the judge decides whether the condition holds; if not, the draft goes on with a prompt saying what is missing, until it is met, the budget is spent, three judgements in a row make no progress, or `stop_goal`. Progress comes as `goal_status`. -32602 (nothing stored) for a budget of zero or less, a judge command that cannot be found or a judge back end that does not exist; -32005 without a draft; -32006 while a turn runs.",
  ),
  stop_goal: method(
    NoParams,
    GoalResultSchema,
    "Stops the channel's goal: the running turn is cancelled and ends cleanly, the goal ends as `stopped`. -32001 when no goal runs.",
  ),
  get_goal: method(NoParams, GetGoalResultSchema, "The channel's draft's goal: running, or the last one that ended."),
  list_runs: method(
    ListRunsParamsSchema,
    ListRunsResultSchema,
    'Durable workflow runs, newest first: status, phases, pending prompts, agents. -32007 (RUNS_NOT_ENABLED) on a server that runs no workflows.',
  ),
  get_run: method(RunParamsSchema, RunResultSchema, 'One run. -32001 (RUN_NOT_FOUND) for an unknown id.'),
  start_run: method(
    StartRunParamsSchema,
    RunResultSchema,
    'Starts a workflow (a module under the project, or a name in `parley.config.json`) as a durable run; answers once the run is stored.',
  ),
  answer_prompt: method(
    AnswerPromptParamsSchema,
    AnswerPromptResultSchema,
    "Answers a run's pending prompt. An answer the choices or validator refuse is `accepted: false` with the validator's message, and the prompt keeps waiting. -32001 (RUN_NOT_FOUND, UNKNOWN_PROMPT); -32009 (PROMPT_ALREADY_ANSWERED) for a second answer.",
  ),
  send_to_run: method(
    SendToRunParamsSchema,
    SendToRunResultSchema,
    "Sends a message to a run: to the agent named, or the one running now (`send`/`sendTo`); it waits in the agent's inbox when no turn runs.",
  ),
  pause_run: method(RunParamsSchema, RunResultSchema, 'Pauses a run after its current step.'),
  resume_run: method(
    RunParamsSchema,
    RunResultSchema,
    'Resumes a paused run; an unfinished run not live on this server is re-executed from its journal, a failed one started again from it.',
  ),
  abort_run: method(AbortRunParamsSchema, RunResultSchema, 'Aborts a run gracefully; its journal is kept.'),
  fork_run: method(
    ForkRunParamsSchema,
    RunResultSchema,
    'A new run of the source\'s workflow that replays its journal through `atStep`, then goes on live, with `forkedFrom { runId, step, answer? }`; with `answer`, the question at that step takes that answer instead ("what if I had said No"). The agents go on in forks of their sessions; the source run is unchanged. Answers once the fork is live. -32001 (RUN_NOT_FOUND, RUN_STEP_NOT_FOUND); -32602 (NOT_A_QUESTION: an answer at a step that is no question; ANSWER_REFUSED: an answer the question refuses), each changing nothing, except that a fork whose validator refuses the answer is aborted.',
  ),
  subscribe_runs: method(
    SubscribeRunsParamsSchema,
    RunSubscriptionResultSchema,
    'Follows runs (or all): `run_updated` and `run_prompt` notifications, and `run_event` with `events: true`.',
  ),
  unsubscribe_runs: method(UnsubscribeRunsParamsSchema, RunSubscriptionResultSchema, 'Stops following runs (or all).'),
  list_schedules: method(
    NoParams,
    ListSchedulesResultSchema,
    'Schedules, oldest first: timing, target, rules, the next due time and the newest firing (its run or session). -32007 (SCHEDULES_NOT_ENABLED) on a server without schedules.',
  ),
  get_schedule: method(
    GetScheduleParamsSchema,
    GetScheduleResultSchema,
    'One schedule and its newest firings. -32001 (SCHEDULE_NOT_FOUND) for an unknown id.',
  ),
  add_schedule: method(
    AddScheduleParamsSchema,
    ScheduleResultSchema,
    'Stores a schedule: a cron expression in an explicit IANA time zone, or an interval; it starts a durable run of a workflow, or prompts a draft or a session. A cron that does not parse, an unknown time zone, a workflow, project, role or session that does not exist is -32602 (INVALID_SCHEDULE) or -32001, naming it; nothing is stored.',
  ),
  pause_schedule: method(ScheduleParamsSchema, ScheduleResultSchema, 'Stops a schedule firing until it is resumed.'),
  resume_schedule: method(
    ScheduleParamsSchema,
    ScheduleResultSchema,
    'A paused schedule goes on from now; the firings due while it was paused are not made up.',
  ),
  remove_schedule: method(
    ScheduleParamsSchema,
    RemoveScheduleResultSchema,
    'Removes a schedule and its firings; the runs it started are kept.',
  ),
  say_in_conversation: method(
    SayInConversationParamsSchema,
    SayInConversationResultSchema,
    'A note from the user into a conversation between agents: shown in its thread at once, and read by both agents with the next message.',
  ),
  list_backends: method(
    ListBackendsParamsSchema,
    ListBackendsResultSchema,
    'The back ends this server can run a draft on, the default first-class: what a client offers for `submit_prompt { backend }`. One this server cannot make (not configured) is listed with `available: false` and the reason.',
  ),
  server_info: method(
    ServerInfoParamsSchema,
    ServerInfoResultSchema,
    "The server, its protocol version and this connection's channel.",
  ),
} as const;

export type MethodTable = typeof methods;
/** The name of a JSON-RPC method the server offers. */
export type MethodName = keyof MethodTable;
/** What a caller passes (defaults not yet applied). */
export type MethodParams<M extends MethodName> = z.input<MethodTable[M]['params']>;
/** What a handler receives (validated). */
export type ParsedMethodParams<M extends MethodName> = z.output<MethodTable[M]['params']>;
/** The result of method `M`, as the client receives it. */
export type MethodResult<M extends MethodName> = z.output<MethodTable[M]['result']>;
/** What a handler returns (before the client parses it). */
export type MethodResultInput<M extends MethodName> = z.input<MethodTable[M]['result']>;

/** Every method's name. */
export const METHOD_NAMES = Object.keys(methods) as MethodName[];

/** Whether `name` is a method the server offers. */
export function isMethodName(name: string): name is MethodName {
  return Object.prototype.hasOwnProperty.call(methods, name);
}
