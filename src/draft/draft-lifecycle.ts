import { closeConversationsOf } from './conversations.js';
import { randomUUID } from 'node:crypto';
import { FORMAT_VERSION } from '../store/index.js';
import { resolveBackend } from './draft-backends.js';
import { resolveRole } from './draft-catalog.js';
import { ChannelParamsSchema, DraftParamsSchema } from './draft-params.js';
import { keepLease, stopLease, takeLease } from './draft-lease.js';
import { persist, refreshFromLog } from './draft-records.js';
import { noteMissingSandbox } from './draft-permissions.js';
import { assertOpen, iso, type ActiveDraft, type DraftServiceState } from './draft-state.js';
import { draftAgentInfo } from './draft-status.js';
import { DraftError, invalidInput } from './errors.js';
import type { DraftSession, DraftSummary, RoleInfo } from './types.js';

// A draft's life: claimed in the DraftStore on a channel (one per channel, one per task),
// registered in the pool, closed by undraft or by Parley, its record saved at each step.

export async function openDraft(
  state: DraftServiceState,
  params: { channelId: string; role: string; project: string; task: string; session?: string },
): Promise<{ sessionId: string; taskSlug: string; project: string }> {
  assertOpen(state);
  const parsed = DraftParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('draft', parsed.error.issues);
  const { channelId } = parsed.data;
  const existing = state.drafts.get(channelId);
  if (existing || state.claims.has(channelId)) {
    throw new DraftError(
      'DRAFT_ALREADY_ACTIVE',
      existing
        ? `Channel "${channelId}" already has a draft (${existing.session.role} on task "${existing.session.taskSlug}"); undraft it first.`
        : `Channel "${channelId}" is drafting an agent right now; wait for it, then undraft it first.`,
      { fault: 'user', data: { channelId, ...(existing ? { sessionId: existing.session.sessionId } : {}) } },
    );
  }
  // The store's claim (below) is what holds a channel and a task, across processes. These in-memory
  // claims cover the work before it in this process (resolving the role, creating the session):
  // without them two `draft` calls racing here would both create a session, and the loser's
  // would be left behind; with them the loser is refused before it makes anything.
  state.claims.add(channelId);
  let taskClaim: string | undefined;
  try {
    const project = await state.catalog.resolve(parsed.data.project);
    const task = await state.catalog.getTask(project, parsed.data.task);
    // One draft per task: a concurrent draft of the same task from another channel waits for nothing, it is refused.
    const claim = `${project.name}\u0000${task.slug}`;
    if (state.taskClaims.has(claim)) {
      throw new DraftError(
        'DRAFT_ALREADY_ACTIVE',
        `Task "${task.slug}" is being drafted on another channel right now.`,
        {
          fault: 'user',
          data: { task: task.slug },
        },
      );
    }
    state.taskClaims.add(claim);
    taskClaim = claim;
    const previous = await state.catalog.readDraft(project, task.slug);
    if (previous?.status === 'active') {
      throw new DraftError(
        'DRAFT_ALREADY_ACTIVE',
        `Task "${task.slug}" already has an active draft (${previous.role}) on channel "${previous.channelId}"; undraft it there first.`,
        { fault: 'user', data: { channelId: previous.channelId, sessionId: previous.sessionId, task: task.slug } },
      );
    }
    // A draft this process is not running may hold the channel in the store: another server's, or
    // one whose recovery failed. Asked before anything is made, so a refusal changes nothing.
    const holder = await state.catalog.activeDraftOfChannel(channelId);
    if (holder) {
      throw new DraftError(
        'DRAFT_ALREADY_ACTIVE',
        `Channel "${channelId}" already has an active draft (${holder.role} on task "${holder.taskSlug}" of project "${holder.project}") that this server is not running (another server runs it, or none does now); undraft it first, or use another channel.`,
        { fault: 'user', data: { channelId, sessionId: holder.sessionId, task: holder.taskSlug } },
      );
    }
    const role = await resolveRole(state, project, parsed.data.role);
    const backend = resolveBackend(state, role.backend, role.model, role.name);
    const description = backend.describe();
    const continued =
      parsed.data.session !== undefined
        ? await sessionToContinue(state, parsed.data.session, project.name, task.slug)
        : undefined;
    const sessionId = continued ?? randomUUID();
    if (continued === undefined)
      await state.manager.createSession({
        sessionId,
        scope: { kind: 'draft', role: role.name, project: project.name, taskSlug: task.slug, channelId },
        agentType: role.name,
        backend: description.name,
        title: `${role.name}: ${task.title}`,
      });
    await writeAgentDescription(state, sessionId, role);
    const now = iso(state);
    const model = role.model ?? description.defaultModel;
    const window = description.models.find((entry) => entry.id === model);
    const session: DraftSession = {
      formatVersion: 1,
      sessionId,
      role: role.name,
      taskSlug: task.slug,
      taskDir: task.taskDir,
      channelId,
      startedAt: now,
      lastActivityAt: now,
      turnCount: 0,
      status: 'active',
      cumulativeCostUsd: 0,
      lastInputTokens: 0,
      lastOutputTokens: 0,
      contextWindow: window?.contextWindow ?? 0,
      maxOutputTokens: window?.maxOutputTokens ?? 0,
      project: project.name,
      backend: description.name,
      continuity: description.continuity,
      nativeStarted: false,
      costUnknown: false,
      ...(model ? { model } : {}),
    };
    try {
      await state.catalog.claimDraft(session);
    } catch (error) {
      // Another process claimed the channel or the task since the checks above: the session made
      // for this draft will never run, so it is archived (kept, readable, taking no messages).
      // A session it was to go on in is someone else's to keep.
      if (continued === undefined) await state.manager.archiveSession(sessionId).catch(() => undefined);
      throw error;
    }
    const draft: ActiveDraft = { session, project, role, backend, writes: Promise.resolve() };
    // Its turns and cost so far are in its history (a fork's, its source's up to the fork point).
    if (continued !== undefined) await refreshFromLog(state, draft);
    activate(state, draft);
    await noteMissingSandbox(state, draft).catch((error: unknown) =>
      process.emitWarning(`Parley: could not check the command sandbox: ${String(error)}`),
    );
    // This server runs the draft from now on; should the lease not be taken now, the first prompt takes it.
    await takeLease(state, session).then(
      () => keepLease(state, draft),
      (error: unknown) =>
        process.emitWarning(
          `Parley: could not take the lease of the draft on channel "${channelId}" yet: ${String(error)}`,
        ),
    );
    return { sessionId, taskSlug: task.slug, project: project.name };
  } finally {
    state.claims.delete(channelId);
    if (taskClaim !== undefined) state.taskClaims.delete(taskClaim);
  }
}

/**
 * The agent description, so managed request building opens with the role: the role file's
 * body is its "# Your Role" text as written (Markdown, not split into bullets).
 */
/**
 * The session a draft goes on in (`draft { session }`): one of this project's task, a fork of its
 * draft, that is not archived and that no draft runs. Refused with what to do otherwise.
 */
async function sessionToContinue(
  state: DraftServiceState,
  sessionId: string,
  project: string,
  taskSlug: string,
): Promise<string> {
  const record = await state.manager.getSession(sessionId);
  const scope = record.scope;
  if (scope.kind !== 'draft' || scope.project !== project || scope.taskSlug !== taskSlug) {
    throw new DraftError(
      'INVALID_INPUT',
      `Session "${sessionId}" is not a draft of task "${taskSlug}" in project "${project}", so a draft of that task cannot go on in it. Fork the task's draft (fork_session) and give the fork, or leave out \`session\` to start a new one.`,
      { fault: 'user', data: { sessionId, project, task: taskSlug } },
    );
  }
  if (record.status === 'archived') {
    throw new DraftError(
      'INVALID_INPUT',
      `Session "${sessionId}" is archived and takes no messages: fork it (fork_session) and draft on the fork.`,
      { fault: 'user', data: { sessionId } },
    );
  }
  if (state.bySession.has(sessionId)) {
    throw new DraftError('DRAFT_ALREADY_ACTIVE', `Session "${sessionId}" is the session of a running draft already.`, {
      fault: 'user',
      data: { sessionId },
    });
  }
  return record.sessionId;
}

async function writeAgentDescription(state: DraftServiceState, sessionId: string, role: RoleInfo): Promise<void> {
  const body = role.instructions.trim();
  await state.manager.store.writeAgentDescription({
    formatVersion: FORMAT_VERSION,
    sessionId,
    agentType: role.name,
    role: body === '' ? `You are the ${role.name} agent: ${role.description}` : body,
    instructions: [],
    allowedTools: role.allowedTools ?? [],
    createdAt: iso(state),
    tokens: Math.ceil((role.description.length + role.instructions.length) / 4),
  });
}

/** Pool registration from draft to undraft. */
export function activate(state: DraftServiceState, draft: ActiveDraft): void {
  state.drafts.set(draft.session.channelId, draft);
  state.bySession.set(draft.session.sessionId, draft);
  const agent = draftAgentInfo(draft);
  state.pool.register(agent);
  state.emitter.emit('agent_status', { channelId: draft.session.channelId, agent });
}

export async function undraft(state: DraftServiceState, params: { channelId: string }): Promise<DraftSummary> {
  const parsed = ChannelParamsSchema.safeParse(params);
  if (!parsed.success) throw invalidInput('undraft', parsed.error.issues);
  const draft = requireDraft(state, parsed.data.channelId);
  return closeDraft(state, draft, 'undraft');
}

/**
 * Seed 000's closeDraft: ends the running turn and the draft's workers, saves draft.json as
 * closed, releases the pool entry. The session stays on disk, readable.
 */
export async function closeDraft(
  state: DraftServiceState,
  draft: ActiveDraft,
  reason: 'undraft' | 'native_resume_failed',
): Promise<DraftSummary> {
  const { session } = draft;
  // Leave the channel first so no new turn starts while this one winds down.
  draft.closing = true;
  state.drafts.delete(session.channelId);
  draft.turn?.controller.abort();
  await draft.turn?.done;
  await state.workers.killAll((agent) => agent.parentSessionId === session.sessionId);
  // Requests still waiting are denied (nothing changes) and "allow always" ends with the draft.
  state.broker.forgetSession(session.sessionId);
  await closeConversationsOf(state, state.conversations, session.sessionId, 'undraft');
  await refreshFromLog(state, draft);
  // Releasing the draft in the store drops its lease with it.
  stopLease(draft);
  const closedAt = state.clock();
  draft.session = {
    ...session,
    ...draft.session,
    status: 'closed',
    closedAt: iso(state, closedAt),
    closeReason: reason,
  };
  await persist(state, draft);
  state.bySession.delete(session.sessionId);
  state.pool.release(session.sessionId);
  state.workers.forget((agent) => agent.parentSessionId === session.sessionId);
  state.emitter.emit('agent_status', { channelId: session.channelId, agent: draftAgentInfo(draft) });
  return {
    sessionId: session.sessionId,
    taskSlug: session.taskSlug,
    turns: draft.session.turnCount,
    cost: draft.session.cumulativeCostUsd,
    durationMs: Math.max(0, closedAt - Date.parse(session.startedAt)),
  };
}

export function requireDraft(state: DraftServiceState, channelId: string): ActiveDraft {
  const draft = state.drafts.get(channelId);
  if (!draft) {
    throw new DraftError(
      'NO_ACTIVE_DRAFT',
      `Channel "${channelId}" has no active draft. Draft an agent first (/draft <role>).`,
      {
        fault: 'user',
        data: { channelId },
      },
    );
  }
  return draft;
}
