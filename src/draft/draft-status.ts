import { ChannelParamsSchema } from './draft-params.js';
import type { ActiveDraft, DraftServiceState } from './draft-state.js';
import { invalidInput } from './errors.js';
import type { AgentInfo, DraftSession, DraftStatus } from './types.js';

// What a draft looks like from outside: its status, its pool entry, its `draft_status` notice.

export async function getDraftStatus(
  state: DraftServiceState,
  params: { channelId: string },
): Promise<{ active: boolean; session?: DraftStatus }> {
  const parsed = ChannelParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('get_draft_status', parsed.error.issues);
  const draft = state.drafts.get(parsed.data.channelId);
  if (!draft) return { active: false };
  return { active: true, session: draftStatus(state, draft) };
}

export function draftStatus(state: DraftServiceState, draft: ActiveDraft): DraftStatus {
  const { session } = draft;
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
    turnRunning: draft.turn !== undefined,
    activeAgents: state.workers.list(
      (agent) =>
        agent.parentSessionId === session.sessionId && (agent.status === 'queued' || agent.status === 'running'),
    ).length,
    ...(session.model ? { model: session.model } : {}),
  };
}

export function draftAgentInfo(draft: ActiveDraft): AgentInfo {
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
