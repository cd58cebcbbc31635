import type { Context } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import { isParleyError, MAIN_CONVERSATION, type StreamEvent } from '../conversation/index.js';
import { isResumeFailureCode, type AgentProfile } from '../backends/index.js';
import { continueOnBackend, runTurnWithFallback } from '../sessions/index.js';
import { resolveBackend } from './draft-backends.js';
import { dispatchAutonomous } from './draft-dispatch.js';
import { submitFirstPrompt } from './draft-first-prompt.js';
import { closeDraft } from './draft-lifecycle.js';
import { ChannelParamsSchema, SubmitParamsSchema } from './draft-params.js';
import { keepLease, letGo, takeLease } from './draft-lease.js';
import { persist, refreshFromLog } from './draft-records.js';
import { closeCutTurn, takeOver } from './draft-recovery.js';
import { assertOpen, findLast, type ActiveDraft, type DraftServiceState, type RunningTurn } from './draft-state.js';
import { emitStatus } from './draft-status.js';
import { toolsFor } from './draft-tools.js';
import { draftMode } from './draft-permissions.js';
import { nativeApprover } from '../workspace/index.js';
import { DraftError, invalidInput } from './errors.js';
import type { SubmitOptions, SubmitParams } from './contract.js';
import type { SubmitResult } from './types.js';

// The turn path: a prompt on a channel becomes a turn of its draft (or an autonomous dispatch), the
// turn streams to its end, and its metrics are saved and pushed; cancel and settled watch it.

export async function submitPrompt(
  state: DraftServiceState,
  params: SubmitParams,
  options: SubmitOptions = {},
): Promise<SubmitResult> {
  assertOpen(state);
  const parsed = SubmitParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('submit_prompt', parsed.error.issues);
  if (parsed.data.draft && (parsed.data.role !== undefined || parsed.data.taskSlug !== undefined)) {
    throw new DraftError(
      'INVALID_INPUT',
      'submit_prompt: pass `role` and `taskSlug` to dispatch the prompt to a worker, or `draft` to draft an agent for it, not both.',
      { fault: 'user', data: { channelId: parsed.data.channelId } },
    );
  }
  const send = (draft: ActiveDraft): Promise<SubmitResult> =>
    resumeDraft(state, draft, parsed.data.content, parsed.data.backend, options.traceParent);
  if (parsed.data.draft) {
    const { channelId, content, draft } = parsed.data;
    return submitFirstPrompt(state, { channelId, content, draft }, send);
  }
  // A first prompt drafting on the channel goes first: this one is for the draft it makes.
  await state.firstPrompts.get(parsed.data.channelId);
  // A draft this server does not run yet may be in the store: another server's whose lease ran out
  // (it died) is taken over here; one another live server runs is refused, naming that server.
  const draft = state.drafts.get(parsed.data.channelId) ?? (await takeOver(state, parsed.data.channelId));
  // Seed 000: an active draft owns routing; role and taskSlug are then ignored.
  if (draft) return send(draft);
  if (parsed.data.backend !== undefined) {
    throw new DraftError(
      'NO_ACTIVE_DRAFT',
      `Channel "${parsed.data.channelId}" has no active draft to move to back end "${parsed.data.backend}". Draft an agent first (/draft <role>).`,
      {
        fault: 'user',
        data: { channelId: parsed.data.channelId, backend: parsed.data.backend },
      },
    );
  }
  if (parsed.data.role === undefined) {
    throw new DraftError(
      'NO_ACTIVE_DRAFT',
      `Channel "${parsed.data.channelId}" has no active draft. Draft an agent first (/draft <role>), or pass \`role\` to dispatch the prompt to a worker.`,
      { fault: 'user', data: { channelId: parsed.data.channelId } },
    );
  }
  return dispatchAutonomous(
    state,
    parsed.data.channelId,
    parsed.data.content,
    parsed.data.role,
    parsed.data.taskSlug,
    options.traceParent,
  );
}

/**
 * Seed 000's resumeDraft: one conversational turn. The user message is stored (acknowledged)
 * before this resolves; the turn then streams into the session log, every event forwarded as
 * `channel_message`. A second submit while a turn runs is refused with TURN_IN_PROGRESS: the
 * user sees the turn is busy and may cancel it, instead of a queued message landing later in a
 * conversation that has moved on.
 */
async function resumeDraft(
  state: DraftServiceState,
  draft: ActiveDraft,
  content: string,
  backendName: string | undefined,
  traceParent: Context | undefined,
): Promise<SubmitResult> {
  return (await startDraftTurn(state, draft, content, backendName, traceParent)).result;
}

/** One turn of a draft, as `resumeDraft`, answering also with the turn running (a goal waits for its end). */
export async function startDraftTurn(
  state: DraftServiceState,
  draft: ActiveDraft,
  content: string,
  backendName?: string,
  traceParent?: Context,
): Promise<{ result: SubmitResult; turn: RunningTurn }> {
  // The user saw the last turn end and typed at once: that turn is only saving its state.
  if (draft.turn?.settling) await draft.turn.done;
  if (state.drafts.get(draft.session.channelId) !== draft) {
    throw new DraftError(
      'NO_ACTIVE_DRAFT',
      `The draft on channel "${draft.session.channelId}" closed as its last turn ended; draft the role again to go on.`,
      {
        fault: 'user',
        data: { channelId: draft.session.channelId, sessionId: draft.session.sessionId },
      },
    );
  }
  if (draft.turn) {
    throw new DraftError(
      'TURN_IN_PROGRESS',
      `A turn is still running on channel "${draft.session.channelId}"; wait for it or cancel it.`,
      {
        fault: 'user',
        data: { channelId: draft.session.channelId, sessionId: draft.session.sessionId },
      },
    );
  }
  const { session, project } = draft;
  const controller = new AbortController();
  let finished!: () => void;
  const turn: RunningTurn = { controller, done: new Promise((resolve) => (finished = resolve)) };
  draft.turn = turn;
  const sessionId = session.sessionId;
  let handle: Awaited<ReturnType<typeof runTurnWithFallback>>;
  try {
    await holdLease(state, draft);
    if (backendName !== undefined && backendName !== draft.session.backend) await moveDraft(state, draft, backendName);
    const { role } = draft;
    const model = draft.session.model ?? role.model;
    const profile: AgentProfile = {
      name: role.name,
      description: role.description,
      instructions: role.instructions,
      ...(role.allowedTools ? { allowedTools: role.allowedTools } : {}),
      permissionMode: draftMode(draft),
      ...(model ? { model } : {}),
    };
    const liveWorkers = state.workers.hasLive((agent) => agent.parentSessionId === sessionId);
    handle = await runTurnWithFallback(state.manager, sessionId, {
      backend: draft.backend,
      prompt: content,
      signal: controller.signal,
      tools: await toolsFor(state, draft.session, role, project, true, draft.backend),
      profile,
      cwd: project.path,
      repairInterrupted: !liveWorkers,
      // A native back end that can wait (Codex) asks on the draft's channel, as the workspace tools do.
      askApproval: nativeApprover(state.broker, { sessionId, root: project.path }),
      ...(model ? { model } : {}),
      ...(role.maxTurns ? { maxTurns: role.maxTurns } : {}),
      ...(traceParent ? { traceParent } : {}),
    });
  } catch (error) {
    draft.turn = undefined;
    finished();
    throw error;
  }
  // runTurn stored the user message and has not pulled a turn event yet: the last user message in main is this one.
  const conversation = await state.manager.loadConversation(sessionId);
  const userBlock = findLast(conversation.blocks, (block) => block.type === 'user_message');
  if (draft.session.continuity === 'native' && !draft.session.nativeStarted) {
    draft.session = { ...draft.session, nativeStarted: true };
    void persist(state, draft);
  }
  void consume(state, draft, handle.events).finally(() => {
    if (draft.turn === turn) draft.turn = undefined;
    finished();
  });
  return { result: { mode: 'draft', accepted: true, sessionId, seq: userBlock?.seq ?? conversation.lastSeq }, turn };
}

/**
 * `submit_prompt { backend }`: the draft's session continues on another back end from this turn on.
 * The session moves first (a native back end gets the history as its own transcript; a system block
 * says what was converted); the draft then runs on the new back end with its default model, and
 * draft.json remembers it, so recovery after a restart picks the same back end.
 */
async function moveDraft(state: DraftServiceState, draft: ActiveDraft, backendName: string): Promise<void> {
  const backend = resolveBackend(state, backendName, undefined, draft.role.name);
  const description = backend.describe();
  const move = await continueOnBackend(state.manager, draft.session.sessionId, backend, { cwd: draft.project.path });
  const window = description.models.find((entry) => entry.id === description.defaultModel);
  const { model: _model, ...rest } = draft.session;
  draft.backend = backend;
  draft.session = {
    ...rest,
    backend: description.name,
    continuity: description.continuity,
    nativeStarted: move.mode === 'native',
    contextWindow: window?.contextWindow ?? 0,
    maxOutputTokens: window?.maxOutputTokens ?? 0,
    ...(description.defaultModel ? { model: description.defaultModel } : {}),
  };
  await persist(state, draft);
  emitStatus(state, draft);
}

/**
 * Before a turn: this server must hold the draft's lease. When another server held it since this
 * one last did (this server's lease ran out and the draft ran there), the draft is read again and
 * the turn cut there is closed as interrupted.
 */
async function holdLease(state: DraftServiceState, draft: ActiveDraft): Promise<void> {
  let takenFrom: string | undefined;
  try {
    ({ takenFrom } = await takeLease(state, draft.session));
  } catch (error) {
    if (isParleyError(error, 'DRAFT_RUN_ELSEWHERE')) {
      // Another server took the draft over while this one's lease had run out: it is theirs now.
      letGo(state, draft, { granted: false, holder: (error.data as { holder?: string } | undefined)?.holder });
    } else if (isParleyError(error, 'DRAFT_NOT_FOUND')) {
      letGo(state, draft, { granted: false });
      throw new DraftError(
        'NO_ACTIVE_DRAFT',
        `The draft on channel "${draft.session.channelId}" was closed on another server. Draft an agent again (/draft <role>).`,
        {
          fault: 'user',
          data: { channelId: draft.session.channelId, sessionId: draft.session.sessionId },
          cause: error,
        },
      );
    }
    throw error;
  }
  keepLease(state, draft);
  if (takenFrom === undefined) return;
  const stored = await state.catalog.readDraft(draft.project, draft.session.taskSlug);
  if (stored?.sessionId === draft.session.sessionId) draft.session = stored;
  await closeCutTurn(state, draft.session.sessionId);
  await refreshFromLog(state, draft);
}

/** Drives the turn to its end, then saves the metrics and pushes `draft_status`. */
async function consume(
  state: DraftServiceState,
  draft: ActiveDraft,
  events: AsyncIterable<StreamEvent>,
): Promise<void> {
  const { sessionId, channelId } = draft.session;
  let resumeFailure: string | undefined;
  try {
    for await (const event of events) {
      // The fallback ladder ran the turn again and it ended well: the resume failure was recovered from.
      if (
        event.type === 'metadata_update' &&
        event.conversationId === MAIN_CONVERSATION &&
        event.metadata.turnComplete &&
        event.metadata.stopReason !== 'error'
      ) {
        resumeFailure = undefined;
      }
      if (
        event.type !== 'block_complete' ||
        event.conversationId !== MAIN_CONVERSATION ||
        event.block.type !== 'system'
      )
        continue;
      const block = event.block;
      if (block.subtype === 'compaction') {
        // The back end compacted its own context (Claude's compact_boundary).
        const { preTokens, trigger } = compactionFacts(block.data);
        state.emitter.emit('context_compacted', { channelId, sessionId, preTokens, trigger });
      } else if (block.subtype === 'error' && isResumeFailureCode(dataCode(block.data))) {
        resumeFailure = block.content;
      }
    }
  } catch (error) {
    process.emitWarning(`Draft turn on channel "${channelId}" ended with an error: ${String(error)}`);
  }
  await refreshFromLog(state, draft).catch(() => undefined);
  await persist(state, draft).catch((error: unknown) =>
    process.emitWarning(`Could not save draft.json for ${sessionId}: ${String(error)}`),
  );
  emitStatus(state, draft);
  if (resumeFailure !== undefined && state.drafts.get(channelId) === draft) {
    await autoUndraft(state, draft, resumeFailure);
  }
}

/**
 * The native session cannot be resumed (seed 000: "SDK session files corrupted/deleted"):
 * notify, undraft, keep the history readable. Continuing as a managed session instead would
 * silently change what the model sees mid-conversation; the user drafts again for a fresh one.
 */
async function autoUndraft(state: DraftServiceState, draft: ActiveDraft, reason: string): Promise<void> {
  const { sessionId, channelId } = draft.session;
  const message = `The ${draft.session.backend} session could not be resumed, so the draft was closed. The conversation so far stays readable; draft the role again to start a fresh session. (${firstLine(reason)})`;
  const now = state.clock();
  await state.manager
    .appendEvents(sessionId, [
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        at: now,
        block: {
          id: randomUUID(),
          type: 'system',
          subtype: 'error',
          content: message,
          createdAt: now,
          completedAt: now,
          data: { code: 'NATIVE_RESUME_FAILED' },
        },
      },
    ])
    .catch(() => undefined);
  draft.turn = undefined;
  await closeDraft(state, draft, 'native_resume_failed');
  state.emitter.emit('draft_closed', { channelId, sessionId, reason: 'native_resume_failed', message });
}

export async function cancel(state: DraftServiceState, params: { channelId: string }): Promise<{ cancelled: boolean }> {
  const parsed = ChannelParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('cancel', parsed.error.issues);
  const { channelId } = parsed.data;
  let cancelled = false;
  const draft = state.drafts.get(channelId);
  if (draft?.turn && !draft.turn.controller.signal.aborted) {
    draft.turn.controller.abort();
    cancelled = true;
  }
  // Without a draft, the channel's running autonomous dispatches are its "turn".
  for (const [sessionId, channel] of state.dispatches) {
    if (channel !== channelId) continue;
    const agent = state.workers.get(sessionId);
    if (agent && (agent.status === 'queued' || agent.status === 'running') && state.workers.kill(sessionId))
      cancelled = true;
  }
  return { cancelled };
}

export async function settled(state: DraftServiceState, params: { channelId: string }): Promise<void> {
  await state.drafts.get(params.channelId)?.turn?.done;
}

function compactionFacts(data: unknown): { preTokens: number; trigger: 'auto' | 'manual' } {
  const record = (typeof data === 'object' && data !== null ? data : {}) as Record<string, unknown>;
  const nested = (
    typeof record['compact_metadata'] === 'object' && record['compact_metadata'] !== null
      ? record['compact_metadata']
      : {}
  ) as Record<string, unknown>;
  const pre = record['preTokens'] ?? record['pre_tokens'] ?? record['tokensBefore'] ?? nested['pre_tokens'];
  const trigger = record['trigger'] ?? nested['trigger'];
  return {
    preTokens: typeof pre === 'number' && pre >= 0 ? pre : 0,
    trigger: trigger === 'manual' ? 'manual' : 'auto',
  };
}

function dataCode(data: unknown): string | undefined {
  if (typeof data !== 'object' || data === null) return undefined;
  const code = (data as Record<string, unknown>)['code'];
  return typeof code === 'string' ? code : undefined;
}

function firstLine(text: string): string {
  const line = text.trim().split('\n', 1)[0] ?? '';
  return line.length > 300 ? `${line.slice(0, 297)}...` : line;
}
