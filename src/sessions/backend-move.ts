import { randomUUID } from 'node:crypto';
import {
  describeConversions,
  folderWorkspace,
  isResumeFailureCode,
  type AgentBackend,
  type Conversion,
  type PortableHistory,
} from '../backends/index.js';
import { MAIN_CONVERSATION, type ConversationBlock, type StreamEvent } from '../conversation/index.js';
import type { SessionRecord } from '../store/index.js';
import { renderCheckpoint } from './checkpoint-format.js';
import type { SessionManager } from './session-manager.js';
import { runTurn, type RunTurnOptions, type TurnHandle } from './turn-runner.js';

/**
 * A conversation moves between back ends (architecture decision 11). Parley's log is the source:
 * on a native back end (claude-sdk, gemini-cli) Parley writes the history as that back end's own
 * transcript, keeps the file with the session, puts it where the back end
 * looks, and resumes it natively; on a managed one Parley builds each request from its log as
 * always. A system block says where the session went and what was converted. The native file a
 * session was imported from is never touched: a copy under a new native id is what resumes.
 *
 * The fallback ladder, when a native resume fails: write the native transcript again from the log
 * and retry once; failing that, continue managed (the request built from the log, on a new native
 * session of the same back end). Each step is a system block the user sees.
 */

/** `data.code` of the system blocks this module writes. */
export const BACKEND_MOVED = 'BACKEND_MOVED';
export const NATIVE_RESUME_RETRY = 'NATIVE_RESUME_RETRY';
export const NATIVE_RESUME_MANAGED = 'NATIVE_RESUME_MANAGED';

/** What moving a session to another back end did: from, to, how, and what was converted. */
export interface BackendMove {
  /** The back end (or, for an import, the tool) the session was on. */
  from: string;
  to: string;
  /** native: resumes a transcript Parley wrote; managed: Parley builds each request; unchanged: it was there already. */
  mode: 'native' | 'managed' | 'unchanged';
  nativeSessionId?: string;
  /** The name the written transcript is kept under with the session. */
  transcript?: string;
  conversions: Conversion[];
}

/** Options of moving a session between back ends: the workspace its native session belongs to. */
export interface MoveOptions {
  /** The workspace the native session belongs to (the CLIs file sessions by folder). */
  cwd: string;
}

/**
 * Makes `backend` the session's back end from its next turn on. Call it before `runTurn` (or
 * `runTurnWithFallback`) whenever the caller may pick another back end than the session's own;
 * a session already on `backend` is left as it is.
 */
export async function continueOnBackend(
  manager: SessionManager,
  sessionId: string,
  backend: AgentBackend,
  options: MoveOptions,
): Promise<BackendMove> {
  const session = await manager.getSession(sessionId);
  const description = backend.describe();
  const to = description.name;
  const from = sourceOf(session);
  const imported = session.readOnly === true;
  if (!imported && (session.native?.backend === to || (description.continuity === 'managed' && session.type === to))) {
    return { from, to, mode: 'unchanged', conversions: [] };
  }
  if (description.continuity === 'managed' || !canWrite(backend)) {
    await manager.moveToBackend(sessionId, to);
    const reason =
      description.continuity === 'managed'
        ? `${to} keeps no sessions of its own: Parley builds each request from its log (the checkpoint and the recent messages).`
        : `${to} cannot take a transcript written by Parley, so Parley builds the request from its log and ${to} starts a new session with it.`;
    if (from !== to || imported)
      await notify(manager, sessionId, `This session now continues on ${to} (it was on ${from}). ${reason}`, {
        code: BACKEND_MOVED,
        from,
        to,
        mode: 'managed',
      });
    return { from, to, mode: 'managed', conversions: [] };
  }
  const conversation = await manager.loadConversation(sessionId);
  if (!conversation.blocks.some((block) => block.type === 'user_message' || block.type === 'assistant_text')) {
    // Nothing said yet: the first turn starts the native session as any new one does.
    await manager.moveToBackend(sessionId, to);
    return { from, to, mode: 'unchanged', conversions: [] };
  }
  const nativeSessionId = randomUUID();
  const written = await writeNativeTranscript(manager, sessionId, backend, {
    cwd: options.cwd,
    nativeSessionId,
    source: from,
  });
  await manager.moveToBackend(sessionId, to, {
    backend: to,
    nativeSessionId,
    transcriptPath: `transcripts/${written.transcript}`,
  });
  await notify(
    manager,
    sessionId,
    `${from === to ? `This session continues natively on ${to} from its own history (a fork, a rewind, or a session that had no ${to} session yet).` : `This session now continues on ${to} (it was on ${from}).`} Parley wrote its history (${written.messages} messages${written.checkpointVersion !== undefined ? `, checkpoint v${written.checkpointVersion} for what was compacted` : ''}) as a native ${to} session, ${nativeSessionId}, and resumes it there. Converted: ${describeConversions(written.conversions)}.`,
    {
      code: BACKEND_MOVED,
      from,
      to,
      mode: 'native',
      nativeSessionId,
      transcript: written.transcript,
      conversions: written.conversions,
    },
  );
  return {
    from,
    to,
    mode: 'native',
    nativeSessionId,
    transcript: written.transcript,
    conversions: written.conversions,
  };
}

interface WrittenNative {
  transcript: string;
  conversions: Conversion[];
  messages: number;
  checkpointVersion?: number;
}

/**
 * Writes the session's history (before `beforeSeq`, when given) as `backend`'s own transcript for
 * `nativeSessionId`, keeps it with the session, and puts it where the back end looks for it.
 */
export async function writeNativeTranscript(
  manager: SessionManager,
  sessionId: string,
  backend: AgentBackend,
  options: MoveOptions & { nativeSessionId: string; beforeSeq?: number; source?: string },
): Promise<WrittenNative> {
  if (!canWrite(backend))
    throw new Error(`The ${backend.describe().name} back end cannot take a transcript written by Parley.`);
  const session = await manager.getSession(sessionId);
  const conversation = await manager.loadConversation(sessionId);
  const checkpoint = await manager.getCheckpoint(sessionId);
  const cleared = session.clearedThroughSeq ?? -1;
  const blocks = conversation.blocks.filter(
    (block) =>
      isHistory(block) &&
      (block.seq ?? 0) > cleared &&
      (options.beforeSeq === undefined || (block.seq ?? 0) < options.beforeSeq),
  );
  const history: PortableHistory = {
    blocks,
    source: options.source ?? sourceOf(session),
    ...(checkpoint && checkpoint.covers.throughSeq >= 0
      ? { compacted: { summary: renderCheckpoint(checkpoint), coversSeq: checkpoint.covers.throughSeq } }
      : {}),
  };
  const written = backend.writeSessionTranscripts(history, {
    nativeSessionId: options.nativeSessionId,
    cwd: options.cwd,
    now: Date.now(),
  });
  const name = `native-${backend.describe().name}-${options.nativeSessionId}`;
  await manager.saveTranscript(sessionId, name, written.main);
  await backend.setupSessionTranscripts(options.nativeSessionId, { main: written.main }, folderWorkspace(options.cwd));
  return {
    transcript: name,
    conversions: written.conversions,
    messages: blocks.filter((block) => block.type === 'user_message' || block.type === 'assistant_text').length,
    ...(history.compacted && checkpoint ? { checkpointVersion: checkpoint.version } : {}),
  };
}

/**
 * `runTurn` with the fallback ladder around a native resume: when the back end says it cannot
 * resume its session (NATIVE_RESUME_FAILED), the native transcript is written again from Parley's
 * log and the turn retried once; when that fails too, the turn runs managed. The user message is
 * stored once; each step is a system block in the turn's events.
 */
export async function runTurnWithFallback(
  manager: SessionManager,
  sessionId: string,
  options: RunTurnOptions,
): Promise<TurnHandle> {
  let session = await manager.getSession(sessionId);
  const description = options.backend.describe();
  if (unlinkedOnItsOwnBackend(session, options) && (await saidAnything(manager, sessionId))) {
    // A rewind, a branch switch or an edit dropped the link (the back end's own session goes on past
    // the point): the active branch is written as a new native session and resumed, not sent managed.
    await continueOnBackend(manager, sessionId, options.backend, { cwd: options.cwd ?? process.cwd() });
    session = await manager.getSession(sessionId);
  }
  const native =
    description.continuity === 'native' && session.native?.backend === description.name ? session.native : undefined;
  const first = await runTurn(manager, sessionId, options);
  if (!native) return first;
  const conversation = await manager.loadConversation(sessionId);
  const userMessage = conversation.blocks.findLast((block) => block.type === 'user_message');
  const events = climb(manager, sessionId, options, first.events, native.nativeSessionId, userMessage?.seq);
  return first.inject ? { events, inject: first.inject } : { events };
}

async function* climb(
  manager: SessionManager,
  sessionId: string,
  options: RunTurnOptions,
  firstEvents: AsyncIterable<StreamEvent>,
  nativeSessionId: string,
  userMessageSeq: number | undefined,
): AsyncGenerator<StreamEvent> {
  const backend = options.backend;
  const name = backend.describe().name;
  if (!(yield* watchForResumeFailure(firstEvents))) return;
  const retry = { ...options, userMessageStored: true, repairInterrupted: false };
  if (canWrite(backend)) {
    yield* await notify(
      manager,
      sessionId,
      `${name} could not resume its session ${nativeSessionId}. Parley writes the session's native transcript again from its own log and tries once more.`,
      {
        code: NATIVE_RESUME_RETRY,
        backend: name,
        nativeSessionId,
      },
    );
    let rewritten = true;
    try {
      await writeNativeTranscript(manager, sessionId, backend, {
        cwd: options.cwd ?? process.cwd(),
        nativeSessionId,
        ...(userMessageSeq !== undefined ? { beforeSeq: userMessageSeq } : {}),
      });
    } catch (error) {
      rewritten = false;
      yield* await notify(
        manager,
        sessionId,
        `Parley could not write the native transcript again: ${error instanceof Error ? error.message : String(error)}`,
        { code: NATIVE_RESUME_RETRY, backend: name, failed: true },
      );
    }
    if (rewritten) {
      const second = await runTurn(manager, sessionId, retry);
      if (!(yield* watchForResumeFailure(second.events))) return;
    }
  }
  yield* await notify(
    manager,
    sessionId,
    `${name} still could not resume the session. Parley continues it managed: it builds this request from its log (the checkpoint and the recent messages), and ${name} starts a new session with it.`,
    { code: NATIVE_RESUME_MANAGED, backend: name },
  );
  const last = await runTurn(manager, sessionId, { ...retry, continuity: 'managed' });
  yield* last.events;
}

/** Passes the events on; returns whether the back end said it could not resume its session. */
async function* watchForResumeFailure(events: AsyncIterable<StreamEvent>): AsyncGenerator<StreamEvent, boolean> {
  let failed = false;
  for await (const event of events) {
    if (
      event.type === 'block_complete' &&
      event.conversationId === MAIN_CONVERSATION &&
      event.block.type === 'system' &&
      event.block.subtype === 'error'
    ) {
      const data = event.block.data;
      if (typeof data === 'object' && data !== null && isResumeFailureCode((data as Record<string, unknown>)['code']))
        failed = true;
    }
    yield event;
  }
  return failed;
}

/** Appends an `info` system block; resolves with the stored event (for a turn's stream) once durable. */
function notify(
  manager: SessionManager,
  sessionId: string,
  content: string,
  data: Record<string, unknown>,
): Promise<StreamEvent[]> {
  const now = Date.now();
  return manager.appendEvents(sessionId, [
    {
      type: 'block_complete',
      conversationId: MAIN_CONVERSATION,
      at: now,
      block: { id: randomUUID(), type: 'system', subtype: 'info', content, createdAt: now, completedAt: now, data },
    },
  ]);
}

type WritingBackend = AgentBackend &
  Required<Pick<AgentBackend, 'writeSessionTranscripts' | 'setupSessionTranscripts'>>;

function canWrite(backend: AgentBackend): backend is WritingBackend {
  return typeof backend.writeSessionTranscripts === 'function' && typeof backend.setupSessionTranscripts === 'function';
}

/** Where the session's history was written: the import's tool, else its back end. */
/** A writable session of a native back end that can take a written transcript, with no link to that back end's own session. */
function unlinkedOnItsOwnBackend(session: SessionRecord, options: RunTurnOptions): boolean {
  const description = options.backend.describe();
  return (
    description.continuity === 'native' &&
    options.continuity !== 'managed' &&
    session.readOnly !== true &&
    session.type === description.name &&
    session.native === undefined &&
    canWrite(options.backend)
  );
}

async function saidAnything(manager: SessionManager, sessionId: string): Promise<boolean> {
  const { blocks } = await manager.loadConversation(sessionId);
  return blocks.some((block) => block.type === 'user_message' || block.type === 'assistant_text');
}

function sourceOf(session: SessionRecord): string {
  return session.scope.kind === 'imported' && session.readOnly ? session.scope.source : (session.type ?? 'unknown');
}

/** Conversation content, and the notices the model is shown (errors, interruptions); Parley's own info notices are not history. */
function isHistory(block: ConversationBlock): boolean {
  if (block.completedAt === undefined) return false;
  if (block.type !== 'system') return true;
  return block.subtype === 'error' || block.subtype === 'interrupted' || block.subtype === 'aborted';
}
