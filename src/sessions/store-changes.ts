import { isDeepStrictEqual } from 'node:util';
import type { StreamEvent } from '../conversation/index.js';
import { KeyedQueue, type SessionRecord, type SessionStore, type StoreChange } from '../store/index.js';
import { readActiveEvents } from './history-path.js';
import { applyAppended, liveSessionOf, type LiveSession, type LiveSessionCache } from './live-sessions.js';
import type { SessionManagerEvents } from './session-manager-types.js';
import type { SessionWriteQueues } from './session-writes.js';

/** How often followed sessions are checked against the log when no notification came: the most a lost one delays delivery. */
export const DEFAULT_CHANGE_POLL_MS = 1_000;

/** Options of `followStoreChanges`: how often followed sessions are checked. */
export interface FollowStoreChangesOptions {
  /**
   * True when someone here follows the session (a subscribed client). A followed session is
   * loaded when another process appends to it, so its events are announced here even when it was
   * not cached, and it is checked against the log every `pollIntervalMs`. Default: none is.
   */
  followed?: (sessionId: string) => boolean;
  /** Default 1 s. */
  pollIntervalMs?: number;
  /** A session could not be brought up to date (the store failed); the next change or poll tries again. */
  onError?: (error: unknown, sessionId: string) => void;
}

type Emit = <K extends keyof SessionManagerEvents>(name: K, payload: SessionManagerEvents[K]) => void;

export interface StoreChangeFollowerOptions extends FollowStoreChangesOptions {
  store: SessionStore & Required<Pick<SessionStore, 'watch'>>;
  cache: LiveSessionCache;
  writes: SessionWriteQueues;
  emit: Emit;
  /** Another process moved the session's active branch: what is kept beside the cached session (request caches) goes. */
  onBranchMoved?: (sessionId: string) => void;
}

/** What one session needs: its log read past what is cached, and (or) its record read again. */
interface PendingSync {
  /** Set when a notification named the first new seq: a followed session that was not cached announces from there. */
  firstSeq?: number;
  record: boolean;
}

/**
 * Keeps a SessionManager's cached sessions true to a store that other processes write too, and
 * announces their changes as if this manager had made them. The store's `watch` is the wake-up and
 * the log is the truth: on each report the log is read after the last `seq` the cache holds, the
 * events are applied to the cached conversation and emitted (`session:event`, then
 * `session:updated`) in `seq` order, each once, in the same per-session queue as this manager's own
 * appends. A record another process replaced is read again (the counts and metrics the log implies
 * stay the cache's). A poll of the followed sessions is the safety net for a lost notification.
 */
export class StoreChangeFollower {
  private readonly syncs = new KeyedQueue();
  private readonly pending = new Map<string, PendingSync>();
  private readonly unwatch: () => void;
  private readonly timer: NodeJS.Timeout;
  private polling = false;
  private stopped = false;

  constructor(private readonly options: StoreChangeFollowerOptions) {
    this.unwatch = options.store.watch((change) => this.onChange(change));
    this.timer = setInterval(() => void this.poll(), options.pollIntervalMs ?? DEFAULT_CHANGE_POLL_MS);
    this.timer.unref();
  }

  /** Stops watching; settles once the syncs under way have finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.unwatch();
    await this.syncs.idleAll();
  }

  private onChange(change: StoreChange): void {
    if (change.kind === 'appended') this.request(change.sessionId, { firstSeq: change.firstSeq, record: false });
    else if (change.kind === 'updated') this.request(change.sessionId, { record: true });
    else for (const sessionId of this.options.cache.ids()) this.request(sessionId, { record: true });
  }

  /** Queues a sync of the session; requests made while one waits are merged into it. */
  private request(sessionId: string, wanted: PendingSync): void {
    if (this.stopped) return;
    const waiting = this.pending.get(sessionId);
    if (waiting) {
      waiting.record ||= wanted.record;
      if (wanted.firstSeq !== undefined)
        waiting.firstSeq = Math.min(waiting.firstSeq ?? wanted.firstSeq, wanted.firstSeq);
      return;
    }
    this.pending.set(sessionId, { ...wanted });
    void this.syncs.run(sessionId, async () => {
      const job = this.pending.get(sessionId)!;
      this.pending.delete(sessionId);
      if (this.stopped) return;
      try {
        await this.sync(sessionId, job);
      } catch (error) {
        (this.options.onError ?? warn)(error, sessionId);
      }
    });
  }

  private async sync(sessionId: string, job: PendingSync): Promise<void> {
    const { cache, writes } = this.options;
    let live = await cache.peek(sessionId)?.catch(() => undefined);
    let announceFrom: number | undefined;
    if (!live) {
      // Not cached: nothing here is stale. Loaded only for someone who follows it, to announce the new events.
      if (job.firstSeq === undefined || !this.followed(sessionId)) return;
      live = await cache.get(sessionId);
      announceFrom = job.firstSeq;
    }
    const session = live;
    await writes.applyInOrder(sessionId, Promise.resolve(), async () => {
      if (announceFrom !== undefined && announceFrom <= session.conversation.lastSeq) {
        // Already in the log the load read: announced, not applied again.
        const loaded = await readActiveEvents(this.options.store, session.record, {
          afterSeq: announceFrom - 1,
          throughSeq: session.conversation.lastSeq,
        });
        announce(this.options.emit, sessionId, session, loaded);
      }
      await catchUp(this.options.store, this.options.emit, sessionId, session);
    });
    // After this manager's own record writes to the session, so it never overwrites one of them.
    if (job.record) await writes.serialize(sessionId, () => this.refreshRecord(sessionId, session));
  }

  /** Takes the stored record, keeping what the cached log implies (counts, metrics, activity); announces it when it changed. */
  private async refreshRecord(sessionId: string, live: LiveSession): Promise<void> {
    const stored = await this.options.store.getSession(sessionId);
    if (!stored) return;
    const previous = live.record;
    const merged: SessionRecord = {
      ...stored,
      metrics: previous.metrics,
      stats: { ...stored.stats, totalMessages: previous.stats.totalMessages, totalTokens: previous.stats.totalTokens },
      updatedAt: Math.max(stored.updatedAt, previous.updatedAt),
    };
    const lastActivity = Math.max(
      stored.lastActivity ?? Number.NEGATIVE_INFINITY,
      previous.lastActivity ?? Number.NEGATIVE_INFINITY,
    );
    if (Number.isFinite(lastActivity)) merged.lastActivity = lastActivity;
    if (isDeepStrictEqual(merged, previous)) return;
    if (branchMoved(previous, merged)) {
      // Another process rewound or switched the session: the cached conversation is another branch.
      const reloaded = liveSessionOf(sessionId, merged, await readActiveEvents(this.options.store, merged));
      live.record = reloaded.record;
      live.conversation = reloaded.conversation;
      this.options.onBranchMoved?.(sessionId);
      this.options.emit('session:history-changed', {
        sessionId,
        reason: 'rewound',
        seq: reloaded.conversation.lastSeq,
        session: live.record,
      });
      this.options.emit('session:updated', { sessionId, action: 'settings_changed', session: live.record });
      return;
    }
    live.record = merged;
    const action = merged.status === 'archived' && previous.status !== 'archived' ? 'archived' : 'settings_changed';
    this.options.emit('session:updated', { sessionId, action, session: merged });
  }

  /** The safety net: each cached, followed session whose log is past what is cached is synced. */
  private async poll(): Promise<void> {
    if (this.polling || this.stopped) return;
    this.polling = true;
    try {
      for (const sessionId of this.options.cache.ids()) {
        if (this.stopped) return;
        if (!this.followed(sessionId)) continue;
        const live = await this.options.cache.peek(sessionId)?.catch(() => undefined);
        if (!live) continue;
        // A rewound session's branch ends at its head, not at the log's end.
        const newest = live.record.head ?? (await this.options.store.lastSeq(sessionId).catch(() => undefined));
        if (newest !== undefined && newest > live.conversation.lastSeq) this.request(sessionId, { record: false });
      }
    } finally {
      this.polling = false;
    }
  }

  private followed(sessionId: string): boolean {
    return this.options.followed?.(sessionId) ?? false;
  }
}

/**
 * Brings a cached session up to the log: the events after the last `seq` it holds (through
 * `throughSeq` when given) are applied and announced. Runs in the session's apply queue, so it is
 * ordered with the manager's own appends; an event is applied once, whichever comes first.
 */
export async function catchUp(
  store: SessionStore,
  emit: Emit,
  sessionId: string,
  live: LiveSession,
  throughSeq?: number,
): Promise<void> {
  const events = await readActiveEvents(store, live.record, {
    afterSeq: live.conversation.lastSeq,
    ...(throughSeq !== undefined ? { throughSeq } : {}),
  });
  if (events.length === 0) return;
  applyAppended(live, events, events.at(-1)!.at);
  announce(emit, sessionId, live, events);
}

function announce(emit: Emit, sessionId: string, live: LiveSession, events: readonly StreamEvent[]): void {
  if (events.length === 0) return;
  for (const event of events) emit('session:event', { sessionId, event });
  emit('session:updated', { sessionId, action: 'events_appended', session: live.record });
}

/**
 * True when the active branch no longer ends where it did: the head moved, or a segment that does
 * not go on from the old head was added. The first append after a rewind (a segment continuing the
 * head, the head cleared) keeps the branch.
 */
function branchMoved(previous: SessionRecord, next: SessionRecord): boolean {
  if (previous.head === next.head && isDeepStrictEqual(previous.segments, next.segments)) return false;
  const added = (next.segments ?? []).slice(previous.segments?.length ?? 0);
  const continued =
    previous.head !== undefined &&
    next.head === undefined &&
    added.length === 1 &&
    added[0]!.parentSeq === previous.head;
  return !continued;
}

function warn(error: unknown, sessionId: string): void {
  process.emitWarning(
    `Could not bring session "${sessionId}" up to date with changes from other servers: ${error instanceof Error ? error.message : String(error)}`,
  );
}
