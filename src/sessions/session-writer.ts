import type { StreamEvent, UnsequencedEvent } from '../conversation/index.js';
import type { SessionRecord, SessionStore, StoreWarning } from '../store/index.js';
import { applyAppended, type LiveSession } from './live-sessions.js';
import { RecordFlusher } from './record-flusher.js';
import { assertWritable } from './session-checks.js';
import type { SessionUpdateAction } from './session-manager-types.js';
import { SessionWriteQueues } from './session-writes.js';

export interface SessionWriterOptions {
  store: SessionStore;
  clock: () => number;
  /** True once the manager is closed: a record flush waiting its interval is then written at once. */
  closed: () => boolean;
  reportWarning: (warning: StoreWarning) => void;
  /** The cached session, loaded from its log once. */
  live: (sessionId: string) => Promise<LiveSession>;
  /**
   * An append is durable and applied to the cached session (called in the order the appends were
   * made): `fresh` are the events the cache did not hold yet (all of them, unless another process's
   * catch-up applied some first), `events` the whole append.
   */
  onApplied: (
    sessionId: string,
    live: LiveSession,
    fresh: StreamEvent[],
    events: StreamEvent[],
    action: SessionUpdateAction,
  ) => void;
  /**
   * When the manager follows other writers of its store (store-changes.ts): brings the cached
   * session up to `throughSeq` from the log, announcing those events, before an own append that
   * landed past them is applied. Undefined (or returning undefined) when nobody else writes.
   */
  catchUp?: (sessionId: string, live: LiveSession, throughSeq: number) => Promise<void> | undefined;
}

/**
 * Writes to the cached sessions: appends to a session's log, changes to its record, each in call
 * order with every other write to the session (session-writes.ts), and session.json rewritten off
 * the append path (record-flusher.ts).
 */
export class SessionWriter {
  private readonly queues = new SessionWriteQueues();
  private readonly flusher: RecordFlusher;

  constructor(private readonly options: SessionWriterOptions) {
    this.flusher = new RecordFlusher({
      write: (sessionId, record) => options.store.updateSession(sessionId, () => record),
      closed: options.closed,
      reportWarning: options.reportWarning,
    });
  }

  /** The per-session write and apply queues, shared with the follower of other writers' changes. */
  get writeQueues(): SessionWriteQueues {
    return this.queues;
  }

  /** Runs `work` after every earlier write to the same session. */
  serialize<T>(sessionId: string, work: () => Promise<T>): Promise<T> {
    return this.queues.serialize(sessionId, work);
  }

  /**
   * Appends events to the session's log; resolves with them numbered once they are durable.
   *
   * Two phases. In call order with every other write to the session, the events take their place
   * in the log (`store.append` numbers appends in call order); the queue is released at once, so
   * appends made while a write is being flushed join the next flush (group commit) instead of
   * waiting one fsync each. Then, strictly in the same order, each append is applied to the cached
   * conversation and announced (`onApplied`) once it is durable.
   */
  async append(
    sessionId: string,
    events: readonly UnsequencedEvent[],
    action: SessionUpdateAction,
  ): Promise<StreamEvent[]> {
    const issued = await this.serialize(sessionId, async () => {
      const live = await this.options.live(sessionId);
      assertWritable(live.record);
      if (live.record.head !== undefined) await this.branchFromHead(sessionId, live);
      const now = this.options.clock();
      const stamped = events.map((event) => ({ ...event, at: event.at ?? now }));
      // Wrapped so `serialize` does not wait for it: the queue moves on while this write is flushed.
      return {
        applied: this.applyInOrder(sessionId, live, this.options.store.append(sessionId, stamped), now, action),
      };
    });
    return issued.applied;
  }

  /** Changes the session's record, after the appends issued before it are applied (so it sees and keeps their effect). */
  updateRecord(sessionId: string, update: (current: SessionRecord) => SessionRecord): Promise<SessionRecord> {
    return this.serialize(sessionId, async () => {
      await this.queues.applied(sessionId);
      const live = await this.options.live(sessionId);
      const previous = live.record;
      const next = update(previous);
      live.record = next;
      try {
        return await this.options.store.updateSession(sessionId, () => next);
      } catch (error) {
        // The caller is told it failed (a full disk), so the cached record must not keep the change.
        if (live.record === next) live.record = previous;
        throw error;
      }
    });
  }

  /**
   * The first append after a rewind or a branch switch starts a new branch: the record gains the
   * segment that continues the head, and loses the head, before the events are appended. A crash
   * between the two leaves an empty segment, which no path reads.
   */
  private async branchFromHead(sessionId: string, live: LiveSession): Promise<void> {
    await this.queues.applied(sessionId);
    const head = live.record.head!;
    const lastSeq = await this.options.store.lastSeq(sessionId);
    const { head: _head, ...rest } = live.record;
    const next: SessionRecord =
      head === lastSeq
        ? rest
        : { ...rest, segments: [...(rest.segments ?? []), { firstSeq: lastSeq + 1, parentSeq: head }] };
    await this.options.store.updateSession(sessionId, () => next);
    live.record = next;
  }

  /** Lets go of what is kept of a session the manager let go. */
  release(sessionId: string): void {
    this.flusher.release(sessionId);
  }

  /** True while the session has a write queued, an append waiting to be applied, or its record waiting to be flushed. */
  busy(sessionId: string): boolean {
    return this.queues.busy(sessionId) || this.flusher.pending(sessionId);
  }

  /** Waits for every write queued so far, then writes the records still waiting out their interval. */
  async close(): Promise<void> {
    await this.queues.idleAll();
    await this.flusher.flushAll();
  }

  /**
   * Applies and announces a durable append after every earlier one to the same session. When
   * another process appended to the session since (a shared PostgreSQL store), its events are
   * applied and announced first, so the cache and the announcements stay in `seq` order without
   * gaps; an event a catch-up already applied is not applied or announced again.
   */
  private applyInOrder(
    sessionId: string,
    live: LiveSession,
    durable: Promise<StreamEvent[]>,
    now: number,
    action: SessionUpdateAction,
  ): Promise<StreamEvent[]> {
    return this.queues.applyInOrder(sessionId, durable, (events) => {
      const apply = (): StreamEvent[] => {
        const known = live.conversation.lastSeq;
        const fresh = events[0]!.seq > known ? events : events.filter((event) => event.seq > known);
        if (fresh.length > 0) applyAppended(live, fresh, now);
        this.flusher.schedule(sessionId, live);
        this.options.onApplied(sessionId, live, fresh, events, action);
        return events;
      };
      const gap = events[0]!.seq > live.conversation.lastSeq + 1;
      const catching = gap ? this.options.catchUp?.(sessionId, live, events[0]!.seq - 1) : undefined;
      return catching ? catching.then(apply) : apply();
    });
  }
}
