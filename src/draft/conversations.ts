import type { Context } from '@opentelemetry/api';
import { randomUUID } from 'node:crypto';
import { MAIN_CONVERSATION, type ConversationBlock, type UnsequencedEvent } from '../conversation/index.js';
import type { AgentBackend, AgentProfile } from '../backends/index.js';
import { runTurn } from '../sessions/index.js';
import type { SessionRecord } from '../store/index.js';
import { resolveBackend } from './draft-backends.js';
import { resolveRole } from './draft-catalog.js';
import { assertOpen, type ConversationsState, type DraftServiceState } from './draft-state.js';
import { DraftError } from './errors.js';
import type { ProjectLocation } from './projects.js';
import type { ParleyTool } from './tools.js';
import type { ConversationReply, ConversationSummary, RoleInfo } from './types.js';
import { readdress } from './workers.js';

/**
 * Conversations between agents (seed 000's future direction): a drafted agent opens a conversation
 * with an agent of another role, says something, gets its reply, and closes it. The other agent has
 * a Parley session of its own (resumable and compacted like any draft's: the conversation's id is
 * that session's id, and its scope names the opener's session), and every turn of it is mirrored
 * into a thread of the opener's session, so the UIs show it live as a subagent thread.
 *
 * Everything a conversation needs to go on after a restart is in the store: the other agent's
 * session (its messages, metrics and whether it is archived, i.e. closed) and the opener's session
 * id in its scope. Only notes the user sent and no agent has read yet are held in memory.
 */

export const DEFAULT_MAX_CONVERSATION_TURNS = 20;
export const DEFAULT_MAX_OPEN_CONVERSATIONS = 3;
/** How alike two messages must be (word-set overlap) to count as the same message again. */
const NEAR_IDENTICAL = 0.9;
/** Exchanges in a row, each near-identical to the one before, that stop a conversation. */
const LOOP_EXCHANGES = 3;

export interface ConversationOwner {
  sessionId: string;
  channelId: string;
  project: string;
  taskSlug?: string;
}

export interface ConversationContext {
  owner: ConversationOwner;
  /** The opener's role: its limits apply. */
  role: RoleInfo;
  project: ProjectLocation;
  /** The tools the other agent gets on its back end (a worker's: no agent tools). */
  toolsFor(role: RoleInfo, backend: AgentBackend): Promise<ParleyTool[]>;
}

export async function openConversation(
  state: DraftServiceState,
  rooms: ConversationsState,
  context: ConversationContext,
  input: { role: string; topic: string },
): Promise<{ conversationId: string; role: string; maxTurns: number }> {
  assertOpen(state);
  const limit = context.role.maxOpenConversations ?? DEFAULT_MAX_OPEN_CONVERSATIONS;
  const open = await openConversationsOf(state, context.owner.sessionId);
  if (open.length >= limit) {
    throw new DraftError(
      'CONVERSATION_LIMIT',
      `You already have ${open.length} open conversation(s) (${open.map((session) => session.sessionId).join(', ')}); the limit for ${context.role.name} is ${limit}. Close one with close_conversation first.`,
      { fault: 'model', data: { open: open.map((session) => session.sessionId), limit } },
    );
  }
  const other = await resolveRole(state, context.project, input.role);
  // Fails early, with the usual message, when the role's back end is not configured.
  resolveBackend(state, other.backend, other.model, other.name);
  const session = await state.manager.createSession({
    scope: {
      kind: 'draft',
      role: other.name,
      project: context.project.name,
      parentSessionId: context.owner.sessionId,
      ...(context.owner.taskSlug ? { taskSlug: context.owner.taskSlug } : {}),
    },
    agentType: other.name,
    title: `Conversation with ${context.role.name}: ${input.topic.slice(0, 80)}`,
  });
  const conversationId = session.sessionId;
  const at = state.clock();
  await state.manager.appendEvents(context.owner.sessionId, [
    {
      type: 'block_start',
      conversationId: MAIN_CONVERSATION,
      at,
      block: {
        id: threadBlockId(conversationId),
        type: 'subagent',
        subagentId: conversationId,
        name: `conversation with ${other.name}`,
        input: input.topic,
        status: 'running',
        createdAt: at,
      },
    },
  ]);
  // The topic opens the other agent's session, so its first reply knows what the talk is about.
  await state.manager.addMessage(conversationId, {
    role: 'user',
    content: `${context.role.name} opened a conversation with you about: ${input.topic}`,
    metadata: { conversationTopic: true },
  });
  return {
    conversationId,
    role: other.name,
    maxTurns: context.role.maxConversationTurns ?? DEFAULT_MAX_CONVERSATION_TURNS,
  };
}

export async function say(
  state: DraftServiceState,
  rooms: ConversationsState,
  context: ConversationContext,
  input: { conversationId: string; message: string },
  signal?: AbortSignal,
  traceContext?: Context,
): Promise<ConversationReply> {
  assertOpen(state);
  const session = await ownConversation(state, context.owner.sessionId, input.conversationId);
  if (rooms.busy.has(input.conversationId)) {
    throw new DraftError(
      'CONVERSATION_BUSY',
      `Conversation ${input.conversationId} is still answering your last message; wait for its reply.`,
      { fault: 'model', data: { conversationId: input.conversationId } },
    );
  }
  const maxTurns = context.role.maxConversationTurns ?? DEFAULT_MAX_CONVERSATION_TURNS;
  const history = exchangesOf((await state.manager.loadConversation(input.conversationId)).blocks);
  if (history.length >= maxTurns) {
    await close(state, rooms, context.owner.sessionId, session, 'turn_limit');
    throw new DraftError(
      'CONVERSATION_TURN_LIMIT',
      `Conversation ${input.conversationId} reached its limit of ${maxTurns} messages and is now closed. Use what was said, or open a new conversation.`,
      {
        fault: 'model',
        data: { conversationId: input.conversationId, maxTurns },
      },
    );
  }
  const notes = rooms.notes.get(input.conversationId);
  const forOther = notes?.forOther.splice(0) ?? [];
  const forOpener = notes?.forOpener.splice(0) ?? [];
  const prompt = [...forOther.map((note) => `[A note from the user to both of you: ${note}]`), input.message].join(
    '\n\n',
  );
  const other = await resolveRole(state, context.project, session.agentType);
  const backend = resolveBackend(state, other.backend, other.model, other.name);
  const profile: AgentProfile = {
    name: other.name,
    description: other.description,
    instructions: other.instructions,
    ...(other.model ? { model: other.model } : {}),
  };

  rooms.busy.add(input.conversationId);
  let reply = '';
  try {
    const at = state.clock();
    await state.manager.appendEvents(context.owner.sessionId, [
      {
        type: 'block_complete',
        conversationId: input.conversationId,
        at,
        block: {
          id: randomUUID(),
          type: 'user_message',
          content: input.message,
          createdAt: at,
          completedAt: at,
          metadata: { from: context.role.name },
        },
      },
    ]);
    const turn = await runTurn(state.manager, input.conversationId, {
      backend,
      prompt,
      tools: await context.toolsFor(other, backend),
      profile,
      cwd: context.project.path,
      ...(signal ? { signal } : {}),
      ...(other.model ? { model: other.model } : {}),
      ...(other.maxTurns ? { maxTurns: other.maxTurns } : {}),
      ...(traceContext ? { traceParent: traceContext } : {}),
    });
    for await (const event of turn.events) {
      if (
        event.conversationId === MAIN_CONVERSATION &&
        event.type === 'block_complete' &&
        event.block.type === 'assistant_text'
      )
        reply = event.block.content;
      // The user message is in the thread already (as the opener said it, without the notes).
      if ((event.type === 'block_start' || event.type === 'block_complete') && event.block.type === 'user_message')
        continue;
      const { seq: _seq, sessionId: _sessionId, ...unsequenced } = event;
      await state.manager.appendEvents(context.owner.sessionId, [
        readdress(unsequenced as UnsequencedEvent, input.conversationId),
      ]);
    }
  } finally {
    rooms.busy.delete(input.conversationId);
  }
  const turnNumber = history.length + 1;
  const looped = isLoop([...history, { said: input.message, reply }]);
  if (looped) {
    await close(state, rooms, context.owner.sessionId, session, 'loop');
    throw new DraftError(
      'CONVERSATION_LOOP',
      `Conversation ${input.conversationId} was stopped: the last ${LOOP_EXCHANGES} exchanges were near-identical (the same message, the same reply). It is closed; its last reply was: ${truncate(reply, 400)}`,
      { fault: 'model', data: { conversationId: input.conversationId, reply } },
    );
  }
  return {
    conversationId: input.conversationId,
    reply,
    turn: turnNumber,
    turnsLeft: Math.max(0, maxTurns - turnNumber),
    ...(forOpener.length > 0 ? { userNotes: forOpener } : {}),
  };
}

export async function closeConversation(
  state: DraftServiceState,
  rooms: ConversationsState,
  ownerSessionId: string,
  conversationId: string,
  because: ConversationSummary['closedBecause'] = 'closed',
): Promise<ConversationSummary> {
  const session = await ownConversation(state, ownerSessionId, conversationId);
  return close(state, rooms, ownerSessionId, session, because);
}

/** Closes every open conversation of a draft (kill, undraft). */
export async function closeConversationsOf(
  state: DraftServiceState,
  rooms: ConversationsState,
  ownerSessionId: string,
  because: ConversationSummary['closedBecause'],
): Promise<ConversationSummary[]> {
  const open = await openConversationsOf(state, ownerSessionId);
  return Promise.all(open.map((session) => close(state, rooms, ownerSessionId, session, because)));
}

/** A note from the user into a conversation: shown in its thread, and read by both agents at the next `say`. */
export async function noteFromUser(
  state: DraftServiceState,
  rooms: ConversationsState,
  conversationId: string,
  message: string,
): Promise<{ conversationId: string; delivered: 'next_message' }> {
  const session = await state.manager.getSession(conversationId).catch(() => undefined);
  const parent = session?.scope.kind === 'draft' ? session.scope.parentSessionId : undefined;
  if (!session || parent === undefined) {
    throw new DraftError(
      'NOT_FOUND',
      `No conversation "${conversationId}". Conversations show as threads named "conversation with <role>"; their id is the thread's.`,
      { fault: 'user', data: { conversationId } },
    );
  }
  if (session.status !== 'active')
    throw new DraftError('CONVERSATION_CLOSED', `Conversation ${conversationId} is closed.`, {
      fault: 'user',
      data: { conversationId },
    });
  const notes = rooms.notes.get(conversationId) ?? { forOther: [], forOpener: [] };
  notes.forOther.push(message);
  notes.forOpener.push(message);
  rooms.notes.set(conversationId, notes);
  const at = state.clock();
  await state.manager.appendEvents(parent, [
    {
      type: 'block_complete',
      conversationId,
      at,
      block: {
        id: randomUUID(),
        type: 'user_message',
        content: message,
        createdAt: at,
        completedAt: at,
        metadata: { from: 'user', note: true },
      },
    },
  ]);
  return { conversationId, delivered: 'next_message' };
}

async function close(
  state: DraftServiceState,
  rooms: ConversationsState,
  ownerSessionId: string,
  session: SessionRecord,
  because: ConversationSummary['closedBecause'],
): Promise<ConversationSummary> {
  const conversationId = session.sessionId;
  const conversation = await state.manager.loadConversation(conversationId);
  const turns = exchangesOf(conversation.blocks).length;
  const costUsd = conversation.metrics.costUsd;
  const at = state.clock();
  const summary: ConversationSummary = {
    conversationId,
    role: session.agentType,
    turns,
    costUsd,
    durationMs: Math.max(0, at - session.createdAt),
    closedBecause: because,
  };
  if (session.status === 'active') {
    await state.manager.archiveSession(conversationId);
    // The thread's block in the opener's session closes with the conversation's totals: its cost rolls up there.
    await state.manager.appendEvents(ownerSessionId, [
      {
        type: 'block_complete',
        conversationId: MAIN_CONVERSATION,
        at,
        block: {
          id: threadBlockId(conversationId),
          type: 'subagent',
          subagentId: conversationId,
          name: `conversation with ${session.agentType}`,
          input: session.title ?? '',
          status: because === 'closed' ? 'success' : 'error',
          output: `${turns} message(s); closed: ${because}`,
          usage: {
            inputTokens: conversation.metrics.inputTokens,
            outputTokens: conversation.metrics.outputTokens,
            cacheReadTokens: conversation.metrics.cacheReadTokens,
            cacheWriteTokens: conversation.metrics.cacheWriteTokens,
          },
          costUsd,
          createdAt: session.createdAt,
          completedAt: at,
        },
      },
    ]);
  }
  rooms.notes.delete(conversationId);
  return summary;
}

async function openConversationsOf(state: DraftServiceState, ownerSessionId: string): Promise<SessionRecord[]> {
  const sessions = await state.manager.listSessions({ scopeKind: 'draft', status: 'active' });
  return sessions.filter(
    (session) => session.scope.kind === 'draft' && session.scope.parentSessionId === ownerSessionId,
  );
}

async function ownConversation(
  state: DraftServiceState,
  ownerSessionId: string,
  conversationId: string,
): Promise<SessionRecord> {
  const session = await state.manager.getSession(conversationId).catch(() => undefined);
  if (!session || session.scope.kind !== 'draft' || session.scope.parentSessionId !== ownerSessionId) {
    throw new DraftError(
      'NOT_FOUND',
      `No conversation "${conversationId}" of yours. open_conversation returns the id to use.`,
      { fault: 'model', data: { conversationId } },
    );
  }
  if (session.status !== 'active') {
    throw new DraftError(
      'CONVERSATION_CLOSED',
      `Conversation ${conversationId} is closed. Open a new one to talk again.`,
      { fault: 'model', data: { conversationId } },
    );
  }
  return session;
}

interface Exchange {
  said: string;
  reply: string;
}

/** The conversation's messages and replies so far, from the other agent's own session's blocks. */
function exchangesOf(blocks: readonly ConversationBlock[]): Exchange[] {
  const found: Exchange[] = [];
  let current: Exchange | undefined;
  for (const block of blocks) {
    if (block.type === 'user_message' && block.metadata?.conversationTopic !== true) {
      current = { said: block.content, reply: '' };
      found.push(current);
    } else if (block.type === 'assistant_text' && current) {
      current.reply = block.content;
    }
  }
  return found;
}

/** The last LOOP_EXCHANGES exchanges each repeat the one before: same message, same reply. */
export function isLoop(history: readonly Exchange[]): boolean {
  if (history.length < LOOP_EXCHANGES) return false;
  const last = history.slice(-LOOP_EXCHANGES);
  for (let index = 1; index < last.length; index++) {
    if (similarity(last[index]!.said, last[index - 1]!.said) < NEAR_IDENTICAL) return false;
    if (similarity(last[index]!.reply, last[index - 1]!.reply) < NEAR_IDENTICAL) return false;
  }
  return true;
}

/** Word-set overlap (Jaccard), case and punctuation aside: 1 for the same words. */
export function similarity(a: string, b: string): number {
  const words = (text: string) =>
    new Set(
      text
        .toLowerCase()
        .split(/[^\p{L}\p{N}]+/u)
        .filter(Boolean),
    );
  const left = words(a);
  const right = words(b);
  if (left.size === 0 && right.size === 0) return 1;
  let shared = 0;
  for (const word of left) if (right.has(word)) shared += 1;
  return shared / (left.size + right.size - shared);
}

/** The thread's block in the opener's session: one id from its start to its close, across restarts. */
function threadBlockId(conversationId: string): string {
  return `conversation-${conversationId}`;
}

function truncate(text: string, limit: number): string {
  return text.length > limit ? `${text.slice(0, limit)}…` : text;
}
