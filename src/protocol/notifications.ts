import * as z from 'zod';
import { StreamEventSchema } from '../conversation/index.js';
import {
  AgentInfoSchema,
  CheckpointSummarizerWireSchema,
  GoalStatusSchema,
  PermissionDecisionSchema,
  PermissionRequestSchema,
  SessionInfoSchema,
} from './schemas.js';
import { HistoryChangedSchema } from './history-schemas.js';
import { RunEventWireSchema, RunPromptWireSchema, RunWireSchema } from './run-schemas.js';
import { AttentionNeededSchema } from './attention-schemas.js';
import { ScheduleRemovedSchema, ScheduleUpdatedSchema } from './schedule-schemas.js';

/**
 * Server → client notifications. The channel ones go to the connections of one channel; the
 * session ones to connections that `subscribe`d to the session (or to all).
 */

export const ChannelMessageSchema = z.object({
  channelId: z.string(),
  sessionId: z.string(),
  /** Rebuild the conversation with `applyEvent`; `event.seq` is the resumption point. */
  event: StreamEventSchema,
});

/** Seed 000: pushed after each turn. */
export const DraftStatusNotificationSchema = z.object({
  channelId: z.string().optional(),
  sessionId: z.string(),
  role: z.string(),
  turnCount: z.number().int().nonnegative(),
  costUsd: z.number().nonnegative(),
  /** Null while the context window is unknown. */
  contextPct: z.number().nullable(),
  /** ISO 8601. */
  lastActivity: z.string(),
});

/** Seed 000: the back end's own compaction (`compact_boundary`) or Parley's. */
export const ContextCompactedSchema = z.object({
  channelId: z.string().optional(),
  sessionId: z.string(),
  preTokens: z.number().nonnegative(),
  trigger: z.enum(['auto', 'manual']),
});

/** The draft was closed by Parley, not by `undraft` (its native session could not be resumed); its history stays readable. */
export const DraftClosedSchema = z.object({
  channelId: z.string(),
  sessionId: z.string(),
  reason: z.string().describe('native_resume_failed'),
  message: z.string(),
});

/** A workspace tool waits for approval; answer with `answer_permission`. */
export const PermissionRequestedSchema = z.object({ channelId: z.string(), request: PermissionRequestSchema });

/** A request was answered: by a client (`client`), the server's approver function (`approver`), or denied because its turn was cancelled or its draft closed (`cancelled`). */
export const PermissionResolvedSchema = z.object({
  channelId: z.string(),
  sessionId: z.string(),
  conversationId: z.string().optional(),
  requestId: z.string(),
  decision: PermissionDecisionSchema,
  source: z.enum(['client', 'approver', 'remembered', 'cancelled']),
});

export const AgentStatusNotificationSchema = z.object({ channelId: z.string(), agent: AgentInfoSchema });

export const SessionUpdateActionSchema = z.enum([
  'created',
  'message_added',
  'events_appended',
  'cleared',
  'archived',
  'settings_changed',
]);

/** `session:updated`. */
export const SessionUpdatedSchema = z.object({
  sessionId: z.string(),
  action: SessionUpdateActionSchema,
  session: SessionInfoSchema,
});

/** Every event appended to a followed session's log, in `seq` order. */
export const SessionEventNotificationSchema = z.object({ sessionId: z.string(), event: StreamEventSchema });

const Trigger = z.enum(['auto', 'manual']);
/** `session:compaction-start`. */
export const CompactionStartedSchema = z.object({
  sessionId: z.string(),
  trigger: Trigger,
  tokensBefore: z.number().nonnegative(),
});
/** `session:compaction-complete`. */
export const CompactionCompletedSchema = z.object({
  sessionId: z.string(),
  trigger: Trigger,
  version: z.number().int().positive(),
  tokensBefore: z.number().nonnegative(),
  tokensAfter: z.number().nonnegative(),
  summarizer: CheckpointSummarizerWireSchema.optional(),
});
/** `session:compaction-error`. */
export const CompactionFailedSchema = z.object({
  sessionId: z.string(),
  trigger: Trigger,
  message: z.string(),
  code: z.string(),
});

/** A followed run's record changed (status, phase, prompts, agents, result). */
export const GoalStatusNotificationSchema = z.object({
  channelId: z.string(),
  sessionId: z.string(),
  goal: GoalStatusSchema,
});

export const RunUpdatedSchema = z.object({ run: RunWireSchema });
/** One event of a followed run, as it happens (live, not the ones replayed from its journal after a restart). */
export const RunEventNotificationSchema = z.object({ runId: z.string(), event: RunEventWireSchema });
/** A followed run asks a question: answer it with `answer_prompt`. */
export const RunPromptNotificationSchema = z.object({ runId: z.string(), prompt: RunPromptWireSchema });

/** One notification of the protocol: its params schema and description. */
export interface NotificationSpec<P extends z.ZodType = z.ZodType> {
  params: P;
  description: string;
  /** Who receives it. */
  audience: 'channel' | 'subscribers' | 'all';
}

function notification<P extends z.ZodType>(
  params: P,
  audience: NotificationSpec['audience'],
  description: string,
): NotificationSpec<P> {
  return { params, audience, description };
}

/** Every notification the server sends, with its params schema and description. */
export const notifications = {
  channel_message: notification(
    ChannelMessageSchema,
    'channel',
    "Seed 000: one stream event of the channel's draft (or dispatch) session.",
  ),
  draft_status: notification(
    DraftStatusNotificationSchema,
    'channel',
    "Seed 000: the draft's metrics, after each turn.",
  ),
  context_compacted: notification(
    ContextCompactedSchema,
    'channel',
    "Seed 000: a compaction of the draft's context (the back end's or Parley's).",
  ),
  draft_closed: notification(
    DraftClosedSchema,
    'channel',
    "The channel's draft was closed by Parley (auto-undraft: its native session could not be resumed). The channel is no longer in draft mode.",
  ),
  goal_status: notification(
    GoalStatusNotificationSchema,
    'channel',
    "The channel's draft's goal was set, judged after a turn, or ended (met, out of budget, stuck, stopped): its budget used and every judgement.",
  ),
  agent_status: notification(AgentStatusNotificationSchema, 'channel', 'A worker agent of the channel changed status.'),
  permission_requested: notification(
    PermissionRequestedSchema,
    'channel',
    'A workspace tool of the channel\'s draft (or of its worker or dispatch) waits for approval: show `request.diff` or `request.command` and answer with `answer_permission`. Until answered the tool waits; the session shows a "Waiting for your approval" system block. A client that attaches later finds waiting requests with `get_permissions`.',
  ),
  permission_resolved: notification(
    PermissionResolvedSchema,
    'channel',
    'An approval request was answered (by any client, the approver, or a cancel): close its prompt.',
  ),
  session_updated: notification(
    SessionUpdatedSchema,
    'subscribers',
    'A followed session was created, got messages, was cleared, archived or reconfigured. While a turn streams, updates caused by its events (`events_appended`) come at most every 250 ms per session, the newest; `session_event` carries every event.',
  ),
  session_event: notification(
    SessionEventNotificationSchema,
    'subscribers',
    "An event appended to a followed session's log.",
  ),
  history_changed: notification(
    HistoryChangedSchema,
    'subscribers',
    "A followed session's active branch changed (a rewind, a branch switch, an edit): what a client holds past `seq` is another branch. Read the session again from the start (`get_events` with no `afterSeq`) rather than applying events on top of what it holds. Also sent to the channel whose draft the session is.",
  ),
  compaction_started: notification(CompactionStartedSchema, 'subscribers', 'A compaction of a followed session began.'),
  compaction_completed: notification(
    CompactionCompletedSchema,
    'subscribers',
    'The compaction finished; a new checkpoint version exists.',
  ),
  compaction_failed: notification(CompactionFailedSchema, 'subscribers', 'The compaction failed; nothing was changed.'),
  run_updated: notification(
    RunUpdatedSchema,
    'subscribers',
    'A run followed with `subscribe_runs` changed: status, phase, pending prompts, agents, result.',
  ),
  run_event: notification(
    RunEventNotificationSchema,
    'subscribers',
    "An event of a run followed with `subscribe_runs` and `events: true` (the harness's SessionEvent, timestamps as ISO 8601).",
  ),
  run_prompt: notification(
    RunPromptNotificationSchema,
    'subscribers',
    'A run followed with `subscribe_runs` waits for an answer (`answer_prompt`).',
  ),
  schedule_updated: notification(
    ScheduleUpdatedSchema,
    'all',
    'A schedule was added, fired (its `last` firing says what became of it), paused or resumed.',
  ),
  schedule_removed: notification(ScheduleRemovedSchema, 'all', 'A schedule was removed.'),
  attention_needed: notification(
    AttentionNeededSchema,
    'all',
    "Something waits for a person (an approval, a run's question, a turn that ended unwatched, a failed worker, run or schedule firing, a compaction that fell back), sent after the grace delay unless answered first, a burst as one. The web UI shows it as a system notification while its tab is hidden.",
  ),
} as const;

export type NotificationTable = typeof notifications;
/** The name of a notification the server sends. */
export type NotificationName = keyof NotificationTable;
/** The params of notification `N`. */
export type NotificationParams<N extends NotificationName> = z.output<NotificationTable[N]['params']>;
/** Every notification's name. */
export const NOTIFICATION_NAMES = Object.keys(notifications) as NotificationName[];

/** Whether `name` is a notification the server sends. */
export function isNotificationName(name: string): name is NotificationName {
  return Object.prototype.hasOwnProperty.call(notifications, name);
}
