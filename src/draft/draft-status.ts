import {
  applyEvents,
  emptyConversation,
  isParleyError,
  type ConversationState,
  type StreamEvent,
} from '../conversation/index.js';
import { readActiveHistory } from '../sessions/index.js';
import { ChannelParamsSchema } from './draft-params.js';
import { turnOpen, type ActiveDraft, type DraftServiceState } from './draft-state.js';
import { invalidInput } from './errors.js';
import { goalOf } from './goal-state.js';
import type { AgentInfo, DraftSession, DraftStatus } from './types.js';

// What a draft looks like from outside: its status, its pool entry, its `draft_status` notice.

export async function getDraftStatus(
  state: DraftServiceState,
  params: { channelId: string },
): Promise<{ active: boolean; session?: DraftStatus }> {
  const parsed = ChannelParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('get_draft_status', parsed.error.issues);
  const draft = state.drafts.get(parsed.data.channelId);
  // The client saw the turn end and asked at once: the turn is still saving its metrics, so the
  // answer waits for them rather than report the turn count and cost of before the turn.
  if (draft?.turn?.settling) await draft.turn.done;
  if (draft && state.drafts.get(parsed.data.channelId) === draft) {
    return { active: true, session: draftStatus(state, draft) };
  }
  // Another server sharing the store may run the channel's draft (or none does, since its server
  // stopped): the client asking here, after a reconnect or a failover, still sees it.
  const stored = await state.catalog.activeDraftOfChannel(parsed.data.channelId);
  if (!stored) return { active: false };
  return { active: true, session: await storedDraftStatus(state, stored) };
}

/**
 * The status of a draft this server does not run, from what every server shares: the record, the
 * lease, and the session log (its metrics, whether its last turn is open, its workers' subagent blocks).
 * A turn or a worker counts as running only while a live server holds the lease; without one it was cut.
 */
async function storedDraftStatus(state: DraftServiceState, stored: DraftSession): Promise<DraftStatus> {
  const lease = await state.catalog.store.readDraftLease(stored.sessionId);
  const { session, conversation, events } = await storedDraftFromLog(state, stored);
  let turnRunning = false;
  let activeAgents = 0;
  if (conversation && events) {
    if (lease) {
      turnRunning = turnOpen(conversation.blocks, events);
      activeAgents = conversation.blocks.filter(
        (block) => block.type === 'subagent' && (block.status === 'pending' || block.status === 'running'),
      ).length;
    }
  }
  return {
    ...statusFields(session),
    turnRunning,
    activeAgents,
    ...(lease
      ? {
          runBy: {
            server: lease.holder,
            here: lease.holder === state.leaseOwner,
            leaseExpiresAt: lease.expiresAt,
          },
        }
      : {}),
  };
}

/**
 * A stored draft's record with its metrics read again from its session log, which the server that
 * runs it writes as its turns go (the record is saved only when a turn ends). The log is read from
 * the store, not this server's session cache: another server's appends may not have reached it
 * yet. A draft whose session is gone keeps what its record says.
 */
export async function storedDraftFromLog(
  state: DraftServiceState,
  stored: DraftSession,
): Promise<{ session: DraftSession; conversation?: ConversationState; events?: StreamEvent[] }> {
  const events: StreamEvent[] = [];
  try {
    const record = await state.manager.store.getSession(stored.sessionId);
    if (!record) return { session: stored };
    for await (const event of readActiveHistory(state.manager.store, record)) events.push(event);
  } catch (error) {
    if (isParleyError(error, 'SESSION_NOT_FOUND')) return { session: stored };
    throw error;
  }
  const conversation = applyEvents(emptyConversation(stored.sessionId), events);
  const { metrics } = conversation;
  return {
    conversation,
    events,
    session: {
      ...stored,
      turnCount: metrics.turns,
      cumulativeCostUsd: metrics.costUsd,
      costUnknown: metrics.costUnknown,
      lastInputTokens: metrics.lastInputTokens,
      lastOutputTokens: metrics.lastOutputTokens,
      contextWindow: metrics.contextWindow ?? stored.contextWindow,
      maxOutputTokens: metrics.maxOutputTokens ?? stored.maxOutputTokens,
      ...(metrics.model ? { model: metrics.model } : {}),
    },
  };
}

export function draftStatus(state: DraftServiceState, draft: ActiveDraft): DraftStatus {
  const { session } = draft;
  const goal = goalOf(state, session.sessionId);
  return {
    ...statusFields(session),
    turnRunning: draft.turn !== undefined,
    activeAgents: state.workers.list(
      (agent) =>
        agent.parentSessionId === session.sessionId && (agent.status === 'queued' || agent.status === 'running'),
    ).length,
    runBy: { server: state.leaseOwner, here: true },
    ...(goal ? { goal } : {}),
  };
}

/** What a draft's record says, under the status' names. */
function statusFields(session: DraftSession): Omit<DraftStatus, 'turnRunning' | 'activeAgents' | 'runBy'> {
  return {
    // seed 000's DraftSession, under its names
    sessionId: session.sessionId,
    role: session.role,
    taskSlug: session.taskSlug,
    taskDir: session.taskDir,
    channelId: session.channelId,
    startedAt: session.startedAt,
    lastActivityAt: session.lastActivityAt,
    turnCount: session.turnCount,
    status: session.status,
    cumulativeCostUsd: session.cumulativeCostUsd,
    lastInputTokens: session.lastInputTokens,
    lastOutputTokens: session.lastOutputTokens,
    contextWindow: session.contextWindow,
    maxOutputTokens: session.maxOutputTokens,
    // Parley's own
    project: session.project,
    backend: session.backend,
    costUnknown: session.costUnknown,
    contextPct: contextPct(session),
    ...(session.model ? { model: session.model } : {}),
  };
}

export function draftAgentInfo(draft: Pick<ActiveDraft, 'session'>): AgentInfo {
  const { session } = draft;
  return {
    agentId: session.sessionId,
    kind: 'draft',
    role: session.role,
    project: session.project,
    taskSlug: session.taskSlug,
    channelId: session.channelId,
    status: session.status === 'active' ? 'running' : 'completed',
    sessionId: session.sessionId,
    startedAt: session.startedAt,
    costUsd: session.cumulativeCostUsd,
    ...(session.closedAt ? { endedAt: session.closedAt } : {}),
  };
}

export function emitStatus(state: DraftServiceState, draft: ActiveDraft): void {
  const { session } = draft;
  state.emitter.emit('draft_status', {
    channelId: session.channelId,
    sessionId: session.sessionId,
    role: session.role,
    turnCount: session.turnCount,
    costUsd: session.cumulativeCostUsd,
    contextPct: contextPct(session),
    lastActivity: session.lastActivityAt,
  });
}

function contextPct(session: DraftSession): number | null {
  if (session.contextWindow <= 0) return null;
  return Math.round((session.lastInputTokens / session.contextWindow) * 1000) / 10;
}
