import {
  applyEvents,
  emptyConversation,
  MAIN_CONVERSATION,
  type ConversationState,
  type StreamEvent,
} from '../conversation/index.js';
import type { SessionRecord, SessionStore } from '../store/index.js';

/**
 * A cached session unused this long, with no write pending, is let go; it is loaded from its log
 * again when next needed. A long-running server that was asked to show many (or large imported)
 * sessions would otherwise keep every one of them in memory.
 */
const LIVE_SESSION_IDLE_MS = 10 * 60_000;
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
}

/** The cached sessions: each one's record and conversation, loaded from the log once, let go when idle. */
export class LiveSessionCache {
  private readonly live = new Map<string, Promise<LiveSession>>();
  /** When each cached session was last used (the manager's clock), and when the cache was last swept. */
  private readonly usedAt = new Map<string, number>();
  private sweptAt = Number.NEGATIVE_INFINITY;

  constructor(private readonly options: LiveSessionCacheOptions) {}

  /** The cached session, loaded now when it is not. */
  get(sessionId: string): Promise<LiveSession> {
    const now = this.options.clock();
    if (now - this.sweptAt >= LIVE_SESSION_SWEEP_MS) this.releaseIdle(now);
    this.usedAt.set(sessionId, now);
    let pending = this.live.get(sessionId);
    if (!pending) {
      pending = this.options.load(sessionId);
      this.live.set(sessionId, pending);
      pending.catch(() => this.live.delete(sessionId));
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

  forget(sessionId: string): void {
    this.live.delete(sessionId);
  }

  /** Drops cached sessions unused for `LIVE_SESSION_IDLE_MS` that have no write queued, being applied, or their record waiting to be written. */
  private releaseIdle(now: number): void {
    this.sweptAt = now;
    for (const [id, usedAt] of this.usedAt) {
      if (now - usedAt < LIVE_SESSION_IDLE_MS) continue;
      if (this.options.busy(id)) continue;
      this.live.delete(id);
      this.usedAt.delete(id);
    }
  }
}

/** A session as its log says: the conversation rebuilt, the record's metrics and counts taken from it. */
export async function loadLiveSession(
  store: SessionStore,
  sessionId: string,
  record: SessionRecord,
): Promise<LiveSession> {
  const events: StreamEvent[] = [];
  for await (const event of store.readLog(sessionId)) events.push(event);
  return liveSessionOf(sessionId, record, events);
}

/** A session as these events (its whole log, in order) say. */
export function liveSessionOf(sessionId: string, record: SessionRecord, events: readonly StreamEvent[]): LiveSession {
  const conversation = applyEvents(emptyConversation(sessionId), events);
  // The log is the truth: stats in session.json are a cache and may lag after a crash.
  const counted = countMessages(events);
  const live: LiveSession = {
    conversation,
    record: {
      ...record,
      metrics: conversation.metrics,
      stats: { ...record.stats, totalMessages: counted.messages, totalTokens: counted.tokens },
    },
  };
  return live;
}

/** A durable append, applied to the cached conversation and record (activity, metrics, counts). */
export function applyAppended(live: LiveSession, events: readonly StreamEvent[], now: number): void {
  live.conversation = applyEvents(live.conversation, events);
  const added = countMessages(events);
  live.record = {
    ...live.record,
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
