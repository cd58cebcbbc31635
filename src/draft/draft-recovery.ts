import { randomUUID } from 'node:crypto';
import { isParleyError, MAIN_CONVERSATION } from '../conversation/index.js';
import { closeInterruptedTurn } from '../sessions/index.js';
import { resolveBackend } from './draft-backends.js';
import { resolveRole } from './draft-catalog.js';
import { ChannelParamsSchema } from './draft-params.js';
import { activate, closeDraft, requireDraft, undraft } from './draft-lifecycle.js';
import { draftAgentInfo, storedDraftFromLog } from './draft-status.js';
import { invalidInput } from './errors.js';
import { persist, refreshFromLog } from './draft-records.js';
import { assertOpen, iso, turnOpenInLog, type ActiveDraft, type DraftServiceState } from './draft-state.js';
import { keepLease, takeLease } from './draft-lease.js';
import type { ProjectLocation } from './projects.js';
import type { LoadedRoles } from './roles.js';
import type { DraftSession, DraftSummary } from './types.js';

// Crash recovery at startup: every draft still active in the DraftStore becomes a draft again.

/**
 * Seed 000's loadActiveDraft, for every project: each draft.json with status active becomes a
 * draft again, its cut turn (if any) closed as interrupted, its metrics recomputed from the log.
 * The next submit_prompt resumes the conversation (native back ends by their session id).
 */
export async function recover(
  state: DraftServiceState,
): Promise<{ recovered: number; failed: Array<{ sessionId: string; reason: string }> }> {
  assertOpen(state);
  const failed: Array<{ sessionId: string; reason: string }> = [];
  let recovered = 0;
  const { found, failed: unreadable } = await state.catalog.scanDrafts();
  for (const entry of unreadable) failed.push({ sessionId: entry.file, reason: entry.reason });
  const active = found
    .filter(({ draft }) => draft.status === 'active' && !state.bySession.has(draft.sessionId))
    .sort((a, b) => Date.parse(b.draft.lastActivityAt) - Date.parse(a.draft.lastActivityAt));
  const rolesByProject = new Map<string, LoadedRoles>();
  for (const { project, draft: session } of active) {
    try {
      if (state.drafts.has(session.channelId) || state.claims.has(session.channelId)) {
        // The newest draft of a channel wins; an older one is closed, its history kept.
        await releaseUnrecoverable(state, session);
        throw new Error(`channel "${session.channelId}" already has a more recent draft`);
      }
      try {
        await state.manager.getSession(session.sessionId);
      } catch (error) {
        // A session that is gone never comes back: its draft is released, so it does not hold its
        // channel and task in the store for ever. (A broken role file or back end can be fixed, so
        // those drafts stay active for the next start, as before.)
        if (isParleyError(error) && error.code === 'SESSION_NOT_FOUND') await releaseUnrecoverable(state, session);
        throw error;
      }
      let roles = rolesByProject.get(project.name);
      if (!roles) {
        roles = await state.catalog.loadRoles(project);
        rolesByProject.set(project.name, roles);
      }
      // A draft another live server runs (a store shared by several servers) stays there.
      const lease = await state.catalog.store.acquireDraftLease(session.sessionId, state.leaseOwner, state.leaseTtlMs);
      if (!lease.granted) continue;
      const draft = await loadDraft(state, project, session, roles).catch(async (error: unknown) => {
        await state.catalog.store.releaseDraftLease(session.sessionId, state.leaseOwner).catch(() => undefined);
        throw error;
      });
      activate(state, draft);
      keepLease(state, draft);
      recovered += 1;
    } catch (error) {
      failed.push({ sessionId: session.sessionId, reason: error instanceof Error ? error.message : String(error) });
    }
  }
  return { recovered, failed };
}

/**
 * A draft from the store, made ready to run here: its role and back end resolved, the turn its last
 * runner was cut in (a crash, or a server that died) closed as interrupted, its metrics recomputed
 * from the log and saved when they differ.
 */
async function loadDraft(
  state: DraftServiceState,
  project: ProjectLocation,
  session: DraftSession,
  roles?: LoadedRoles,
): Promise<ActiveDraft> {
  const role = await resolveRole(state, project, session.role, roles);
  const backend = resolveBackend(state, session.backend, session.model ?? role.model, role.name);
  await closeCutTurn(state, session.sessionId);
  const draft: ActiveDraft = { session, project, role, backend, writes: Promise.resolve() };
  await refreshFromLog(state, draft);
  // Saved only when the log says something the record does not (a turn cut by the crash).
  if (JSON.stringify(draft.session) !== JSON.stringify(session)) await persist(state, draft);
  return draft;
}

/**
 * The channel's active draft in the store, which this server is not running: taken over when its
 * lease is free (the server that ran it died, or let it go), so the prompt that asked runs here.
 * DRAFT_RUN_ELSEWHERE while another live server holds it; undefined when the channel has no draft.
 * Two prompts racing here share one takeover.
 */
export function takeOver(state: DraftServiceState, channelId: string): Promise<ActiveDraft | undefined> {
  let running = state.takeovers.get(channelId);
  if (!running) {
    running = (async () => {
      const session = await state.catalog.activeDraftOfChannel(channelId);
      if (!session) return undefined;
      await takeLease(state, session);
      try {
        const draft = await loadDraft(state, await state.catalog.resolve(session.project), session);
        assertOpen(state);
        activate(state, draft);
        keepLease(state, draft);
        return draft;
      } catch (error) {
        await state.catalog.store.releaseDraftLease(session.sessionId, state.leaseOwner).catch(() => undefined);
        throw error;
      }
    })().finally(() => state.takeovers.delete(channelId));
    state.takeovers.set(channelId, running);
  }
  return running;
}

/**
 * `undraft` on any server. A draft this server runs closes here; one no live server runs is taken
 * over and closed here (its cut turn marked). One another live server runs is closed in the store,
 * its metrics read from the log: releasing it drops that server's lease, and at its next renewal
 * that server finds the draft gone and lets it go (its turn ended, its workers killed).
 */
export async function undraftAnywhere(state: DraftServiceState, params: { channelId: string }): Promise<DraftSummary> {
  const parsed = ChannelParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('undraft', parsed.error.issues);
  const { channelId } = parsed.data;
  if (state.drafts.has(channelId)) return undraft(state, parsed.data);
  assertOpen(state);
  let draft: ActiveDraft | undefined;
  try {
    draft = await takeOver(state, channelId);
  } catch (error) {
    if (!isParleyError(error, 'DRAFT_RUN_ELSEWHERE')) throw error;
    const stored = await state.catalog.activeDraftOfChannel(channelId);
    if (stored) return closeElsewhere(state, stored);
  }
  return closeDraft(state, draft ?? requireDraft(state, channelId), 'undraft');
}

async function closeElsewhere(state: DraftServiceState, stored: DraftSession): Promise<DraftSummary> {
  const { session } = await storedDraftFromLog(state, stored);
  const closedAt = state.clock();
  const closed: DraftSession = { ...session, status: 'closed', closedAt: iso(state, closedAt), closeReason: 'undraft' };
  await state.catalog.saveDraft(closed);
  state.emitter.emit('agent_status', { channelId: closed.channelId, agent: draftAgentInfo({ session: closed }) });
  return {
    sessionId: closed.sessionId,
    taskSlug: closed.taskSlug,
    turns: closed.turnCount,
    cost: closed.cumulativeCostUsd,
    durationMs: Math.max(0, closedAt - Date.parse(closed.startedAt)),
  };
}

async function releaseUnrecoverable(state: DraftServiceState, session: DraftSession): Promise<void> {
  await state.catalog.saveDraft({ ...session, status: 'closed', closedAt: iso(state), closeReason: 'recovery_failed' });
}

/**
 * A turn cut by a crash: its open blocks are closed (runTurn's repair), and when no
 * `metadata_update` closed it — text may have streamed before the crash, so an answer block is
 * no proof — it is marked with an `interrupted` system block so the history shows what happened.
 */
export async function closeCutTurn(state: DraftServiceState, sessionId: string): Promise<void> {
  await closeInterruptedTurn(state.manager, sessionId);
  const conversation = await state.manager.loadConversation(sessionId);
  if (!(await turnOpenInLog(state, sessionId, conversation.blocks))) return;
  const now = state.clock();
  await state.manager.appendEvents(sessionId, [
    {
      type: 'block_complete',
      conversationId: MAIN_CONVERSATION,
      at: now,
      block: {
        id: randomUUID(),
        type: 'system',
        subtype: 'interrupted',
        content:
          'The previous turn was interrupted (Parley stopped before it finished). Its partial output is kept above.',
        createdAt: now,
        completedAt: now,
      },
    },
    {
      type: 'metadata_update',
      conversationId: MAIN_CONVERSATION,
      at: now,
      metadata: { turnComplete: true, stopReason: 'interrupted' },
    },
  ]);
}
