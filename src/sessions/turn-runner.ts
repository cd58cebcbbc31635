import { randomUUID } from 'node:crypto';
import type { Context } from '@opentelemetry/api';
import {
  MAIN_CONVERSATION,
  type ConversationBlock,
  type ConversationState,
  type StreamEvent,
  type UnsequencedEvent,
} from '../conversation/index.js';
import type { AgentBackend, AgentProfile, ExecuteRequest, ToolDefinition } from '../backends/index.js';
import { inAgentTrace, startAgentTrace, type AgentTrace } from '../telemetry/index.js';
import type { SessionManager } from './session-manager.js';
import { TurnIdGuard } from './turn-ids.js';
import { hookNotice, promptWithContext, TurnHooks } from './turn-hooks.js';

/** The sessions each manager has run `SessionStart` for in this process: it runs once per session, not per turn. */
const startedSessions = new WeakMap<SessionManager, Set<string>>();

/** Options of `runTurn`: the back end, the prompt, and what else the turn gets. */
export interface RunTurnOptions {
  backend: AgentBackend;
  /** The new user message. */
  prompt: string;
  signal?: AbortSignal;
  tools?: ToolDefinition[];
  profile?: AgentProfile;
  model?: string;
  cwd?: string;
  outputSchema?: Record<string, unknown>;
  maxTurns?: number;
  /** Marks the user message pinned: its intent survives every compaction. */
  pinned?: boolean;
  /**
   * Close a turn a crash cut short before running this one (default true). Off while other work
   * still writes to the session (a draft's worker threads are open but alive, not interrupted).
   */
  repairInterrupted?: boolean;
  /**
   * The user message is already in the log (a retry of the same turn, backend-move.ts's fallback
   * ladder): it is not stored again.
   */
  userMessageStored?: boolean;
  /**
   * `managed`: Parley builds the request from its log even on a native back end, which then starts
   * a new native session of its own with it (the last rung of the fallback ladder).
   */
  continuity?: 'managed';
  /**
   * The OpenTelemetry context the turn's `invoke_agent` span goes under: the `execute_tool` span of
   * the call that asked for this turn, a workflow phase, a client's `traceparent`. Default: the
   * active context.
   */
  traceParent?: Context;
  /** Where a native back end's own tool calls are approved (`ExecuteRequest.askApproval`). */
  askApproval?: ExecuteRequest['askApproval'];
}

/** A running turn: its numbered, durable events as an async iterable, and a way to message it. */
export interface TurnHandle {
  /** The turn's events, numbered and durable, in order; ends when the turn ends. */
  events: AsyncIterable<StreamEvent>;
  /** Delivers a message to the running turn, where the back end can take one. */
  inject?(message: string): Promise<void>;
}

/**
 * Set on the user message that opens a turn: a turn is open until a `metadata_update` with
 * `turnComplete` follows it. Messages added with `addMessage` alone open no turn.
 */
export const TURN_MARKER = 'opensTurn';

/**
 * One user→agent turn on a session, the same way for every caller (CLI chat, drafts, workflow agents):
 * close a turn a crash cut, build the request (managed back ends) or resume by id (native ones),
 * store the user message, run the back end and append every event it produces to the log before
 * handing it on. Nothing above the back-end layer branches on which back end it is.
 */
export async function runTurn(
  manager: SessionManager,
  sessionId: string,
  options: RunTurnOptions,
): Promise<TurnHandle> {
  if (options.repairInterrupted !== false) await closeInterruptedTurn(manager, sessionId);
  const endTurn = manager.beginTurn(sessionId);
  const session = await manager.getSession(sessionId).catch((error: unknown) => {
    endTurn();
    throw error;
  });
  const description = options.backend.describe();
  const hooks = manager.hooks
    ? new TurnHooks(manager.hooks, {
        sessionId,
        cwd: options.cwd ?? manager.projectRoot ?? process.cwd(),
        ...(session.native?.transcriptPath ? { transcriptPath: session.native.transcriptPath } : {}),
      })
    : undefined;
  const toolHooks = hooks?.nativeToolHooks();
  const request: ExecuteRequest = {
    sessionId,
    prompt: options.prompt,
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.tools ? { tools: hooks ? hooks.wrapTools(options.tools) : options.tools } : {}),
    ...(toolHooks ? { toolHooks } : {}),
    ...(options.askApproval ? { askApproval: options.askApproval } : {}),
    ...(options.profile ? { profile: options.profile } : {}),
    ...(options.model ? { model: options.model } : {}),
    ...(options.cwd ? { cwd: options.cwd } : {}),
    ...(options.outputSchema ? { outputSchema: options.outputSchema } : {}),
    ...(options.maxTurns ? { maxTurns: options.maxTurns } : {}),
  };
  // The turn's `invoke_agent` span (undefined with no tracing SDK): a compaction and the back end's
  // own spans nest under it, their parents handed on explicitly (buildRequest, request.traceContext).
  const agentTrace = startAgentTrace({
    agentName: options.profile?.name ?? session.agentType,
    sessionId,
    backend: description.name,
    prompt: options.prompt,
    ...(options.model ? { requestModel: options.model } : {}),
    ...(options.traceParent ? { parent: options.traceParent } : {}),
  });
  if (agentTrace) request.traceContext = () => agentTrace.currentContext();
  // A turn that fails before it streams (building the request, storing the prompt) still ends its span, as failed.
  try {
    const hookContext: string[] = [];
    if (hooks) {
      const refused = await runPromptHooks(manager, sessionId, options, hooks, hookContext);
      if (refused) {
        agentTrace?.end();
        endTurn();
        return { events: refused };
      }
    }
    let estimatedInputTokens: number | undefined;
    const linked = description.continuity === 'native' && session.native?.backend === description.name;
    // A native back end with no session of its own yet, on a session that already has a history (it
    // came from another back end and this one takes no written transcript): the history goes in as
    // a built request, as on a managed back end, and the back end's new session starts from it.
    const managed =
      description.continuity === 'managed' ||
      options.continuity === 'managed' ||
      (!linked && hasHistory((await manager.loadConversation(sessionId)).blocks));
    if (!managed && linked) {
      request.nativeSessionId = session.native!.nativeSessionId;
      request.isNewSession = false;
    } else if (!managed) {
      request.isNewSession = true;
    } else {
      if (description.continuity === 'native') {
        // A fresh native session, so nothing the back end kept under an old id is mixed in.
        request.nativeSessionId = randomUUID();
        request.isNewSession = true;
      }
      // Built before the message is stored, so the prompt is not also in "Recent Conversation".
      const built = await manager.buildRequest(sessionId, options.prompt, {
        signal: options.signal,
        traceParent: agentTrace?.currentContext(),
        // A native back end brings tools of its own, which the description names; a managed one has only these.
        ...(description.continuity === 'managed' ? { toolNames: (options.tools ?? []).map((tool) => tool.name) } : {}),
      });
      request.systemPrompt = built.systemPrompt;
      request.prompt = built.userPrompt;
      estimatedInputTokens = built.totalTokens;
    }
    request.prompt = promptWithContext(request.prompt, hookContext);
    const snapshots =
      manager.fileSnapshots && mayChangeFiles(description.continuity, options) ? manager.fileSnapshots : undefined;
    let turnId: string | undefined;
    if (!options.userMessageStored) {
      const message = await manager.addMessage(sessionId, {
        role: 'user',
        content: options.prompt,
        metadata: { [TURN_MARKER]: true },
        ...(options.pinned ? { pinned: true } : {}),
      });
      turnId = message.id;
      // Taken once the prompt is durable and before the back end can touch a file: the tree the turn started from.
      if (snapshots)
        await takeSnapshot(manager, snapshots, sessionId, { seq: message.seq, phase: 'before_turn', turnId });
    }
    const afterTurn = snapshots
      ? (seq: number) =>
          takeSnapshot(manager, snapshots, sessionId, { seq, phase: 'after_turn', ...(turnId ? { turnId } : {}) })
      : undefined;

    const turn = inAgentTrace(agentTrace, () => options.backend.execute(request));
    const guard = new TurnIdGuard(await manager.loadConversation(sessionId), randomUUID().slice(0, 8));
    const events = streamIntoLog(
      manager,
      sessionId,
      hooks ? hooks.stream(turn.events, options.signal) : turn.events,
      description.name,
      estimatedInputTokens,
      guard,
      agentTrace,
      afterTurn,
      endTurn,
    );
    return turn.inject ? { events, inject: (message) => turn.inject!(message) } : { events };
  } catch (error) {
    agentTrace?.end(error);
    endTurn();
    throw error;
  }
}

/**
 * `SessionStart` (the session's first turn in this process: `startup` for a new one, `resume` for
 * one with a history) and `UserPromptSubmit`. Their added context goes into `context`. When a
 * `UserPromptSubmit` hook refuses the prompt, nothing reaches the back end and the prompt is not
 * stored: the turn is a system block giving the hook's reason, and the events of that are returned.
 */
async function runPromptHooks(
  manager: SessionManager,
  sessionId: string,
  options: RunTurnOptions,
  hooks: TurnHooks,
  context: string[],
): Promise<AsyncIterable<StreamEvent> | undefined> {
  const signal = options.signal ? { signal: options.signal } : {};
  let started = startedSessions.get(manager);
  if (!started) startedSessions.set(manager, (started = new Set()));
  if (!started.has(sessionId)) {
    started.add(sessionId);
    const source = hasHistory((await manager.loadConversation(sessionId)).blocks) ? 'resume' : 'startup';
    const outcome = await hooks.run('SessionStart', { source }, { matchValue: source, ...signal });
    context.push(...outcome.context);
  }
  // A retry of a turn whose prompt is already stored (the fallback ladder) was accepted once: it is not asked again.
  if (options.userMessageStored) return undefined;
  const outcome = await hooks.run('UserPromptSubmit', { prompt: options.prompt }, signal);
  context.push(...outcome.context);
  if (!outcome.blocked) return undefined;
  const now = Date.now();
  const stored = await manager.appendEvents(sessionId, [
    ...hooks.drain(),
    hookNotice('info', `A UserPromptSubmit hook refused the prompt, so it was not sent: ${outcome.blocked.reason}`, {
      hook: 'UserPromptSubmit',
      source: outcome.blocked.source,
    }),
    {
      type: 'metadata_update',
      conversationId: MAIN_CONVERSATION,
      metadata: { turnComplete: true, stopReason: 'blocked_by_hook' },
      at: now,
    },
  ]);
  return (async function* () {
    yield* stored;
  })();
}

/** Appends issued but not yet durable, at most: beyond it the back end waits for the disk. */
const MAX_APPENDS_IN_FLIGHT = 256;

/**
 * Appends each back-end event to the log and yields it once durable, in order. The next event is
 * taken from the back end while earlier ones are still being written, so events that arrive during
 * one flush share the next (a burst of deltas costs one fsync, not one each).
 *
 * The turn's trace observes each event here, before the back end is asked for the next one (so a
 * tool call's span is open when the back end runs the tool), rather than through
 * `traceAgentEvents`: a wrapping iterator would cost every event one more promise hop.
 */
async function* streamIntoLog(
  manager: SessionManager,
  sessionId: string,
  source: AsyncIterable<UnsequencedEvent>,
  backendName: string,
  estimatedInputTokens: number | undefined,
  guard: TurnIdGuard,
  agentTrace: AgentTrace | undefined,
  afterTurn: ((seq: number) => Promise<void>) | undefined,
  endTurn: () => void,
): AsyncIterable<StreamEvent> {
  // The turn counts as running (rewinds are refused) until its last event and its native link are stored.
  try {
    let nativeSessionId: string | undefined;
    const inFlight: Array<Promise<StreamEvent[]>> = [];
    const issue = (unsequenced: UnsequencedEvent): void => {
      agentTrace?.observe(unsequenced);
      let event = guard.apply(unsequenced);
      if (event.type === 'metadata_update') {
        if (event.metadata.nativeSessionId) nativeSessionId = event.metadata.nativeSessionId;
        if (
          event.metadata.turnComplete &&
          estimatedInputTokens !== undefined &&
          event.metadata.estimatedInputTokens === undefined
        ) {
          event = { ...event, metadata: { ...event.metadata, estimatedInputTokens } };
        }
      }
      const appended = manager.appendEvents(sessionId, [event]);
      // Awaited in order below; until then a failure must not count as unhandled.
      appended.catch(() => undefined);
      inFlight.push(appended);
    };
    const iterator = source[Symbol.asyncIterator]();
    let next: Promise<IteratorResult<UnsequencedEvent>> | undefined;
    try {
      next = iterator.next();
      while (next !== undefined || inFlight.length > 0) {
        if (next !== undefined && inFlight.length < MAX_APPENDS_IN_FLIGHT) {
          // Whichever comes first: the back end's next event, or the oldest append becoming durable.
          const step =
            inFlight.length === 0 ? await next : await Promise.race([next, inFlight[0]!.then(() => undefined)]);
          if (step !== undefined) {
            if (step.done) {
              next = undefined;
              agentTrace?.end();
            } else {
              issue(step.value);
              next = iterator.next();
            }
            continue;
          }
        }
        const [stored] = await inFlight.shift()!;
        // The files as the turn left them, recorded before anyone hears that it ended (a rewind may follow at once).
        if (afterTurn && closesTurn(stored!)) await afterTurn(stored!.seq);
        yield stored!;
      }
    } catch (error) {
      agentTrace?.end(error);
      // The back end threw (or a write failed): stop it, keep what was already written, then end the turn.
      if (next !== undefined) {
        next = undefined;
        stopSource(iterator);
      }
      for (const appended of inFlight.splice(0)) {
        const stored = await appended.catch(() => undefined);
        if (stored !== undefined) yield* stored;
      }
      // A back end must end a failed turn with an error block; one that throws instead still gets one.
      const now = Date.now();
      const stored = await manager.appendEvents(sessionId, [
        {
          type: 'block_complete',
          conversationId: MAIN_CONVERSATION,
          block: {
            id: randomUUID(),
            type: 'system',
            subtype: 'error',
            content: `The ${backendName} back end failed: ${error instanceof Error ? error.message : String(error)}`,
            createdAt: now,
          },
          at: now,
        },
        {
          type: 'metadata_update',
          conversationId: MAIN_CONVERSATION,
          metadata: { turnComplete: true, stopReason: 'error' },
          at: now,
        },
      ]);
      if (afterTurn) await afterTurn(stored[stored.length - 1]!.seq);
      yield* stored;
    } finally {
      // The consumer stopped early: the back end stops too (what `for await` would do).
      if (next !== undefined) stopSource(iterator);
      agentTrace?.end();
    }
    if (nativeSessionId) {
      const session = await manager.getSession(sessionId);
      if (session.native?.nativeSessionId !== nativeSessionId) {
        await manager.setNativeSession(sessionId, { backend: backendName, nativeSessionId });
      }
    }
  } finally {
    endTurn();
  }
}

/**
 * Closes the back end's stream. Not awaited: with a `next()` still pending, an async generator
 * only returns after that event arrives, and the caller must not wait for the model to speak again.
 */
function stopSource(iterator: AsyncIterator<UnsequencedEvent>): void {
  iterator.return?.().catch(() => undefined);
}

/**
 * After a crash mid-turn the log ends with open blocks (a tool call with no result, text still
 * streaming) or a user message no turn answered. Closes them and says so with an `interrupted`
 * system block, so the conversation shows what happened and the next turn starts clean.
 */
export async function closeInterruptedTurn(manager: SessionManager, sessionId: string): Promise<boolean> {
  const conversation = await manager.loadConversation(sessionId);
  const lastUser = findLastIndex(conversation.blocks, (block) => block.type === 'user_message');
  const userBlock = lastUser === -1 ? undefined : conversation.blocks[lastUser]!;
  let turnOpen = false;
  if (userBlock?.type === 'user_message' && userBlock.metadata?.[TURN_MARKER] === true) {
    // Only the events after that message are read: cheap even for a long history.
    const after = await manager.getEvents(sessionId, { afterSeq: userBlock.seq ?? -1 });
    turnOpen = !after.some(
      (event) =>
        event.type === 'metadata_update' &&
        event.conversationId === MAIN_CONVERSATION &&
        event.metadata.turnComplete === true,
    );
  }
  const repairs = interruptedTurnRepairs(conversation, Date.now(), { turnOpen });
  if (repairs.length === 0) return false;
  await manager.appendEvents(sessionId, repairs);
  return true;
}

/**
 * The events that close a turn a crash cut short: blocks left open are closed (a tool call with no
 * result as an error), and when a block was open or `turnOpen` says the last turn never completed,
 * an `interrupted` system block and the turn's closing metadata follow. None when the last turn ended. Pure.
 */
export function interruptedTurnRepairs(
  conversation: ConversationState,
  now: number,
  options: { turnOpen?: boolean } = {},
): UnsequencedEvent[] {
  const repairs: UnsequencedEvent[] = [];
  const threads: Array<[string, readonly ConversationBlock[]]> = [
    [MAIN_CONVERSATION, conversation.blocks],
    ...conversation.subagents.map((thread): [string, readonly ConversationBlock[]] => [thread.id, thread.blocks]),
  ];
  for (const [conversationId, blocks] of threads) {
    for (const block of blocks) {
      const open =
        block.completedAt === undefined ||
        ((block.type === 'tool_use' || block.type === 'subagent') &&
          (block.status === 'pending' || block.status === 'running'));
      if (!open) continue;
      const closed: ConversationBlock =
        block.type === 'tool_use' || block.type === 'subagent'
          ? {
              ...block,
              status: 'error',
              completedAt: now,
              ...(block.type === 'tool_use' ? { error: 'interrupted: the turn was cut short' } : {}),
            }
          : { ...block, completedAt: now };
      repairs.push({ type: 'block_complete', conversationId, block: closed, at: now });
    }
  }
  if (repairs.length > 0 || options.turnOpen) {
    repairs.push({
      type: 'block_complete',
      conversationId: MAIN_CONVERSATION,
      block: {
        id: randomUUID(),
        type: 'system',
        subtype: 'interrupted',
        content:
          'The previous turn was interrupted (Parley stopped before it finished). Its partial output is kept above.',
        createdAt: now,
      },
      at: now,
    });
    repairs.push({
      type: 'metadata_update',
      conversationId: MAIN_CONVERSATION,
      metadata: { turnComplete: true, stopReason: 'interrupted' },
      at: now,
    });
  }
  return repairs;
}

/**
 * Whether a turn may change the project's files: a native back end brings tools of its own, and a
 * managed one can only through the tools it is given.
 */
function mayChangeFiles(continuity: 'native' | 'managed', options: RunTurnOptions): boolean {
  return continuity === 'native' || (options.tools?.length ?? 0) > 0;
}

function closesTurn(event: StreamEvent): boolean {
  return (
    event.type === 'metadata_update' &&
    event.conversationId === MAIN_CONVERSATION &&
    event.metadata.turnComplete === true
  );
}

/**
 * Takes a file snapshot; one that fails (git missing, a full disk) never fails the turn: it becomes
 * an error block in the session saying the files of this point cannot be restored.
 */
async function takeSnapshot(
  manager: SessionManager,
  snapshots: NonNullable<SessionManager['fileSnapshots']>,
  sessionId: string,
  point: { seq: number; phase: 'before_turn' | 'after_turn'; turnId?: string },
): Promise<void> {
  try {
    await snapshots.take(sessionId, point);
  } catch (error) {
    const now = Date.now();
    await manager
      .appendEvents(sessionId, [
        {
          type: 'block_complete',
          conversationId: MAIN_CONVERSATION,
          block: {
            id: randomUUID(),
            type: 'system',
            subtype: 'error',
            content:
              `Parley could not snapshot the project's files ${point.phase === 'before_turn' ? 'before' : 'after'} this turn, ` +
              `so they cannot be restored to this point: ${error instanceof Error ? error.message : String(error)}`,
            data: { fileSnapshot: point.phase },
            createdAt: now,
          },
          at: now,
        },
      ])
      .catch(() => undefined);
  }
}

/** Whether anything was said yet: user or assistant messages. */
function hasHistory(blocks: readonly ConversationBlock[]): boolean {
  return blocks.some((block) => block.type === 'user_message' || block.type === 'assistant_text');
}

function findLastIndex<T>(items: readonly T[], predicate: (item: T) => boolean): number {
  for (let index = items.length - 1; index >= 0; index--) if (predicate(items[index]!)) return index;
  return -1;
}
