import type { SessionMetrics } from '../conversation/index.js';
import { iso, type ActiveDraft, type DraftServiceState } from './draft-state.js';
import { emitStatus } from './draft-status.js';

// A draft's draft.json: its metrics taken from the session log, and its writes, one at a time.

/** Metrics from the session log (not process-local counters), so they are right across resume and restart. */
export async function refreshFromLog(state: DraftServiceState, draft: ActiveDraft): Promise<void> {
  const { sessionId } = draft.session;
  const metrics: SessionMetrics = (await state.manager.loadConversation(sessionId)).metrics;
  const record = await state.manager.getSession(sessionId);
  const lastActivity = record.lastActivity ?? record.updatedAt;
  draft.session = {
    ...draft.session,
    turnCount: metrics.turns,
    cumulativeCostUsd: metrics.costUsd,
    costUnknown: metrics.costUnknown,
    lastInputTokens: metrics.lastInputTokens,
    lastOutputTokens: metrics.lastOutputTokens,
    contextWindow: metrics.contextWindow ?? draft.session.contextWindow,
    maxOutputTokens: metrics.maxOutputTokens ?? draft.session.maxOutputTokens,
    lastActivityAt: iso(state, Math.max(lastActivity, Date.parse(draft.session.lastActivityAt))),
    ...(metrics.model ? { model: metrics.model } : {}),
    ...(record.native && record.native.backend === draft.session.backend
      ? { nativeSessionId: record.native.nativeSessionId }
      : {}),
  };
}

export function persist(state: DraftServiceState, draft: ActiveDraft): Promise<void> {
  // The draft's state when the write runs (not when it was queued): once closed, every later write is its release.
  const write = draft.writes.then(() => state.catalog.saveDraft(draft.session));
  draft.writes = write.catch(() => undefined);
  return write;
}

/**
 * A worker's cost is in the drafting session's log once it ends; between turns nothing else
 * would save it, so the draft's metrics are refreshed, saved and pushed now.
 */
export function workerEnded(state: DraftServiceState, parentSessionId: string): void {
  const draft = state.bySession.get(parentSessionId);
  if (!draft || draft.turn || draft.closing) return;
  void (async () => {
    await refreshFromLog(state, draft);
    await persist(state, draft);
    if (!draft.turn && !draft.closing) emitStatus(state, draft);
  })().catch(() => undefined);
}
