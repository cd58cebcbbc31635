import {
  blockToMessage,
  describeIssues,
  type ChatMessage,
  type RuntimeSessionData,
  type StreamEvent,
} from '../conversation/index.js';
import { SessionFilterSchema, type SessionFilter, type SessionRecord, type SessionStore } from '../store/index.js';
import { SessionError } from './errors.js';
import { readActiveHistory, readActiveHistoryBefore } from './history-path.js';
import type { LiveSession } from './live-sessions.js';

// What readers see: the sessions, and a session's recent messages, its log after a `seq`, its runtime data.

/** The sessions the filter selects, most recently active first; a cached session's record is its newest. */
export async function listSessions(
  store: SessionStore,
  filter: SessionFilter,
  cached: (sessionId: string) => Promise<LiveSession> | undefined,
): Promise<SessionRecord[]> {
  const parsed = SessionFilterSchema.safeParse(filter);
  if (!parsed.success) {
    throw new SessionError('INVALID_INPUT', `listSessions: ${describeIssues(parsed.error.issues)}.`, { fault: 'user' });
  }
  const sessions: SessionRecord[] = [];
  for await (const record of store.listSessions(parsed.data)) {
    // A session being written may be newer than its session.json (written at most every RECORD_FLUSH_INTERVAL_MS).
    const live = await cached(record.sessionId)?.catch(() => undefined);
    sessions.push(live === undefined ? record : structuredClone(live.record));
  }
  sessions.sort((a, b) => (b.lastActivity ?? b.updatedAt) - (a.lastActivity ?? a.updatedAt));
  return sessions;
}

/**
 * The messages the next request sees (after the last `clearMessages`), newest last, at most
 * `limit`. `includeCleared` returns the whole history.
 */
export function recentMessages(live: LiveSession, limit: number, options: { includeCleared?: boolean }): ChatMessage[] {
  const clearedThrough = options.includeCleared ? -1 : (live.record.clearedThroughSeq ?? -1);
  const messages: ChatMessage[] = [];
  const blocks = live.conversation.blocks;
  for (let index = blocks.length - 1; index >= 0 && messages.length < limit; index--) {
    const block = blocks[index]!;
    const seq = block.seq ?? -1;
    if (seq <= clearedThrough) break;
    const message = blockToMessage(block, seq);
    if (message) messages.push(message);
  }
  return messages.reverse();
}

/** The active branch after `afterSeq` (all of it by default), at most `limit` events. */
export async function readEvents(
  store: SessionStore,
  record: SessionRecord,
  options: { afterSeq?: number; limit?: number },
): Promise<StreamEvent[]> {
  const events: StreamEvent[] = [];
  const limit = options.limit ?? Number.POSITIVE_INFINITY;
  for await (const event of readActiveHistory(
    store,
    record,
    options.afterSeq === undefined ? {} : { afterSeq: options.afterSeq },
  )) {
    events.push(event);
    if (events.length >= limit) break;
  }
  return events;
}

/** RuntimeSessionData: the saved data plus the parsed blocks. */
export async function runtimeSession(
  store: SessionStore,
  sessionId: string,
  live: LiveSession,
): Promise<RuntimeSessionData> {
  const names = await store.listTranscripts(sessionId);
  const main = names.includes('main') ? await store.readTranscript(sessionId, 'main') : undefined;
  const threads = await Promise.all(
    live.conversation.subagents.map(async (thread) => {
      const raw = names.includes(thread.id) ? await store.readTranscript(sessionId, thread.id) : undefined;
      return { ...thread, ...(raw !== undefined ? { rawTranscript: raw } : {}) };
    }),
  );
  const record = live.record;
  return {
    sessionId: record.sessionId,
    type: record.type,
    agentProfileReference: record.agentProfileReference,
    status: record.status,
    ...(record.lastActivity !== undefined ? { lastActivity: record.lastActivity } : {}),
    createdAt: record.createdAt,
    ...(main !== undefined ? { rawTranscript: main } : {}),
    workspaceFiles: [],
    blocks: live.conversation.blocks,
    subagents: threads,
    metrics: live.conversation.metrics,
    lastSeq: live.conversation.lastSeq,
  };
}

/** The newest `limit` events of the active branch below `beforeSeq` (above `afterSeq` when given), oldest first. */
export function readEventsBefore(
  store: SessionStore,
  record: SessionRecord,
  options: { beforeSeq: number; afterSeq?: number; limit: number },
): Promise<StreamEvent[]> {
  return readActiveHistoryBefore(store, record, options);
}
