import {
  applyEvents,
  emptyConversation,
  foldInParts,
  MAIN_CONVERSATION,
  taskTitleFromMessage,
  type ConversationState,
  type StreamEvent,
} from '../conversation/index.js';
import type { SessionRecord, SessionStore } from '../store/index.js';
import { readActiveHistory } from './history-path.js';

/**
 * A cached session unused this long, with no write pending, is let go; it is loaded from its log
 * again when next needed. A long-running server that was asked to show many (or large imported)
 * sessions would otherwise keep every one of them in memory.
 */
export const DEFAULT_LIVE_SESSION_IDLE_MS = 10 * 60_000;
/** How often, at most, the cache is swept for such sessions (on use; no timer keeps the process alive). */
const LIVE_SESSION_SWEEP_MS = 60_000;

export interface LiveSession {
  record: SessionRecord;
  conversation: ConversationState;
}

export interface LiveSessionCacheOptions {
  /** Milliseconds since the epoch (the manager's clock). */
  clock: () => number;
  /** Loads a session that is not cached. */
  load: (sessionId: string) => Promise<LiveSession>;
  /** True while the session has a write queued, being applied, or its record waiting to be written: it is then kept. */
  busy: (sessionId: string) => boolean;
  /** Called when a session is let go, so what is kept beside it (request caches) goes with it. */
  onRelease?: (sessionId: string) => void;
  /** Unused this long, a session is let go (default `DEFAULT_LIVE_SESSION_IDLE_MS`). */
  idleMs?: number;
  /** At most this many sessions cached: past it the least recently used idle ones are let go first (default: no bound). */
  maxSessions?: number;
}

/** The cached sessions: each one's record and conversation, loaded from the log once, let go when idle. */
export class LiveSessionCache {
  private readonly live = new Map<string, Promise<LiveSession>>();
  /** When each cached session was last used (the manager's clock), and when the cache was last swept. */
  private readonly usedAt = new Map<string, number>();
  private sweptAt = Number.NEGATIVE_INFINITY;
  private readonly idleMs: number;
  private readonly sweepMs: number;
  private readonly maxSessions: number;

  constructor(private readonly options: LiveSessionCacheOptions) {
    this.idleMs = options.idleMs ?? DEFAULT_LIVE_SESSION_IDLE_MS;
    // A short window is swept as often as it is long, or its sessions would stay a minute anyway.
    this.sweepMs = Math.min(LIVE_SESSION_SWEEP_MS, this.idleMs);
    this.maxSessions = options.maxSessions ?? Number.POSITIVE_INFINITY;
  }

  /** The cached session, loaded now when it is not. */
  get(sessionId: string): Promise<LiveSession> {
    const now = this.options.clock();
    if (now - this.sweptAt >= this.sweepMs) this.releaseIdle(now);
    // Re-inserted, so the map's order is the order of last use (the size bound lets the oldest go).
    this.usedAt.delete(sessionId);
    this.usedAt.set(sessionId, now);
    let pending = this.live.get(sessionId);
    if (!pending) {
      pending = this.options.load(sessionId);
      this.live.set(sessionId, pending);
      pending.catch(() => this.forget(sessionId));
      if (this.live.size > this.maxSessions) this.releaseOldest(sessionId);
    }
    return pending;
  }

  /** The cached session if there is one; neither loads it nor counts as a use. */
  peek(sessionId: string): Promise<LiveSession> | undefined {
    return this.live.get(sessionId);
  }

  /** The ids of the sessions cached now. */
  ids(): string[] {
    return [...this.live.keys()];
  }

  /** How many sessions are cached now. */
  get size(): number {
    return this.live.size;
  }

  forget(sessionId: string): void {
    this.live.delete(sessionId);
    this.usedAt.delete(sessionId);
    this.options.onRelease?.(sessionId);
  }

  /** Drops cached sessions unused for the idle window that have no write queued, being applied, or their record waiting to be written. */
  private releaseIdle(now: number): void {
    this.sweptAt = now;
    for (const [id, usedAt] of this.usedAt) {
      if (now - usedAt < this.idleMs) continue;
      if (this.options.busy(id)) continue;
      this.forget(id);
    }
  }

  /** Past the size bound: drops the least recently used sessions that are not busy, never `keep` (just loaded). */
  private releaseOldest(keep: string): void {
    for (const id of this.usedAt.keys()) {
      if (this.live.size <= this.maxSessions) return;
      if (id === keep || this.options.busy(id)) continue;
      this.forget(id);
    }
  }
}

/** Events folded into the conversation a part at a time while its log is read (see `loadLiveSession`). */
const LOAD_PART = 4_096;

/**
 * A session as its active branch says: the conversation rebuilt, the record's metrics and counts
 * taken from it. The log is folded as it is read, a part at a time, never held whole: a session of
 * a million events otherwise held every event beside the blocks built from them.
 */
export async function loadLiveSession(
  store: SessionStore,
  sessionId: string,
  record: SessionRecord,
): Promise<LiveSession> {
  const fold = foldInParts(emptyConversation(sessionId));
  const tally = new LogTally();
  let part: StreamEvent[] = [];
  for await (const event of readActiveHistory(store, record)) {
    part.push(event);
    if (part.length < LOAD_PART) continue;
    fold.add(part);
    tally.add(part);
    part = [];
  }
  fold.add(part);
  tally.add(part);
  return liveSessionFrom(record, fold.finish(), tally);
}

/** A session as these events (its whole active branch, in order) say. */
export function liveSessionOf(sessionId: string, record: SessionRecord, events: readonly StreamEvent[]): LiveSession {
  const tally = new LogTally();
  tally.add(events);
  return liveSessionFrom(record, applyEvents(emptyConversation(sessionId), events), tally);
}

function liveSessionFrom(record: SessionRecord, conversation: ConversationState, tally: LogTally): LiveSession {
  // The log is the truth: stats in session.json are a cache and may lag after a crash.
  const title = record.title ?? tally.title;
  return {
    conversation,
    record: {
      ...record,
      ...(title !== undefined ? { title } : {}),
      metrics: conversation.metrics,
      stats: { ...record.stats, totalMessages: tally.messages, totalTokens: tally.tokens },
    },
  };
}

/** What a log says beside its conversation, counted a part at a time: its messages, their tokens, its title. */
class LogTally {
  messages = 0;
  tokens = 0;
  title: string | undefined;

  add(events: readonly StreamEvent[]): void {
    const counted = countMessages(events);
    this.messages += counted.messages;
    this.tokens += counted.tokens;
    this.title ??= titleFromEvents(events);
  }
}

/** A durable append, applied to the cached conversation and record (activity, metrics, counts). */
export function applyAppended(live: LiveSession, events: readonly StreamEvent[], now: number): void {
  live.conversation = applyEvents(live.conversation, events);
  const added = countMessages(events);
  const title = live.record.title ?? titleFromEvents(events);
  live.record = {
    ...live.record,
    ...(title !== undefined ? { title } : {}),
    lastActivity: now,
    updatedAt: now,
    metrics: live.conversation.metrics,
    stats: {
      ...live.record.stats,
      totalMessages: live.record.stats.totalMessages + added.messages,
      totalTokens: live.record.stats.totalTokens + added.tokens,
    },
  };
}

/** Longest title made from a first message. */
export const SESSION_TITLE_MAX = 80;

/**
 * A title for an untitled session: the words of its first request (no model is asked, so every
 * session gets one at once, on every back end). Undefined until the session has a request.
 */
export function titleFromEvents(events: readonly StreamEvent[]): string | undefined {
  for (const event of events) {
    if (event.type !== 'block_complete' || event.conversationId !== MAIN_CONVERSATION) continue;
    if (event.block.type === 'user_message' && event.block.content.trim() !== '')
      return taskTitleFromMessage(event.block.content, SESSION_TITLE_MAX);
  }
  return undefined;
}

/** Messages (user and assistant text blocks completed in main) and their tokens among the events. */
function countMessages(events: readonly StreamEvent[]): { messages: number; tokens: number } {
  let messages = 0;
  let tokens = 0;
  for (const event of events) {
    if (event.type !== 'block_complete' || event.conversationId !== MAIN_CONVERSATION) continue;
    const block = event.block;
    if (block.type !== 'user_message' && block.type !== 'assistant_text') continue;
    messages += 1;
    const counted = block.metadata?.['tokens'];
    if (typeof counted === 'number') tokens += counted;
  }
  return { messages, tokens };
}
