import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { StreamEvent, StreamEventDraft } from '../../conversation/index.js';
import { StoreError } from '../errors.js';
import { numberEvents } from '../numbering.js';
import { sessionNotFound } from '../validate.js';
import type { ConnectionTarget } from './connection.js';
import { errorCode, isConnectionFailure, isRefusedConnection, isRetryableConflict, SQLSTATE, storeErrorFrom } from './errors.js';
import type { Queries } from './queries.js';
import { FIRST_BACKOFF_MS, MAX_BACKOFF_MS, pause } from './retry.js';

/** One `append` call waiting for its transaction. */
interface PendingAppend {
  sessionId: string;
  /** Made here, before the first attempt; the same on every retry, so a retry can find an earlier commit. */
  batchId: string;
  /** Numbered from 0 until the commit says where they land. */
  events: StreamEvent[];
  bodies: string[];
  resolve: (events: StreamEvent[]) => void;
  reject: (error: unknown) => void;
}

export interface AppendCommitterOptions {
  pool: pg.Pool;
  queries: Queries;
  target: ConnectionTarget;
  /** How long a group whose connection failed is retried before the appends fail. */
  retryForMs: number;
}

/** Events in one transaction at most; a larger backlog goes in the next ones. */
const MAX_GROUP_EVENTS = 4_000;
const MAX_CONFLICT_RETRIES = 10;

/**
 * Group commit for the PostgreSQL store. One transaction is in flight at a time; appends (to any
 * session) that arrive while it commits wait, and all of them go in the next one. Groups commit in
 * call order, so appends to one session from this process keep their order.
 *
 * A group whose connection fails may or may not have committed. It is sent again, unchanged, on a
 * new connection until `retryForMs` passes: if the first attempt did commit, its batch ids are
 * already in `append_batches`, the retry fails on their unique key, and the seqs the first attempt
 * got are read back. An append is stored once, whatever the network did.
 */
export class AppendCommitter {
  private pending: PendingAppend[] = [];
  private draining: Promise<void> | undefined;

  constructor(private readonly options: AppendCommitterOptions) {}

  append(sessionId: string, drafts: readonly StreamEventDraft[]): Promise<StreamEvent[]> {
    let events: StreamEvent[];
    let bodies: string[];
    try {
      // Copied and serialized now: the caller may change its drafts once append returns.
      events = numberEvents(sessionId, 0, drafts);
      bodies = events.map(bodyOf);
    } catch (error) {
      return Promise.reject(error);
    }
    return new Promise((resolve, reject) => {
      this.pending.push({ sessionId, batchId: randomUUID(), events, bodies, resolve, reject });
      this.draining ??= this.drain();
    });
  }

  /** Settles once every append made so far has committed or failed. */
  async idle(): Promise<void> {
    while (this.draining !== undefined) await this.draining;
  }

  private async drain(): Promise<void> {
    while (this.pending.length > 0) {
      const group = this.takeGroup();
      try {
        await this.commit(group);
      } catch (error) {
        for (const append of group) append.reject(error);
      }
    }
    // Cleared in the same step that found nothing pending, so an append made next starts a new drain.
    this.draining = undefined;
  }

  private takeGroup(): PendingAppend[] {
    let count = 0;
    let taken = 0;
    while (taken < this.pending.length && (taken === 0 || count + this.pending[taken]!.events.length <= MAX_GROUP_EVENTS)) {
      count += this.pending[taken]!.events.length;
      taken += 1;
    }
    return this.pending.splice(0, taken);
  }

  private async commit(group: PendingAppend[]): Promise<void> {
    const started = Date.now();
    let backoff = FIRST_BACKOFF_MS;
    let conflicts = 0;
    let outcomeUnknown = false;
    let remaining = group;
    for (;;) {
      try {
        const bases = await this.send(remaining);
        for (const append of remaining) {
          const base = bases.get(append.sessionId);
          if (base === undefined) append.reject(sessionNotFound(append.sessionId));
          else append.resolve(placed(append, base.firstSeq + base.offsets.get(append)!));
        }
        return;
      } catch (error) {
        if (errorCode(error) === SQLSTATE.uniqueViolation && (error as { constraint?: string }).constraint === 'append_batches_pkey') {
          // An earlier attempt committed after all: hand back where it put each append, and send again only what it did not hold.
          remaining = await this.settleCommitted(remaining);
          if (remaining.length === 0) return;
          continue;
        }
        // A deadlock or serialization failure rolled the statement back: run it again.
        if (isRetryableConflict(error) && ++conflicts <= MAX_CONFLICT_RETRIES) continue;
        if (!isConnectionFailure(error)) throw storeErrorFrom(error, this.options.target, 'append events');
        // Refused before anything was sent: this attempt stored nothing.
        outcomeUnknown ||= !isRefusedConnection(error);
        if (Date.now() - started >= this.options.retryForMs) throw this.gaveUp(error, started, outcomeUnknown);
        await pause(backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    }
  }

  /** Runs the group's one statement; returns, per session found, its old `last_seq` and each append's offset among its events. */
  private async send(group: readonly PendingAppend[]): Promise<Map<string, { firstSeq: number; offsets: Map<PendingAppend, number> }>> {
    const perSession = new Map<string, { count: number; offsets: Map<PendingAppend, number> }>();
    const batchIds: string[] = [];
    const batchSessions: string[] = [];
    const batchOffsets: number[] = [];
    const batchCounts: number[] = [];
    const eventSessions: string[] = [];
    const eventOffsets: number[] = [];
    const bodies: string[] = [];
    for (const append of group) {
      let session = perSession.get(append.sessionId);
      if (session === undefined) perSession.set(append.sessionId, (session = { count: 0, offsets: new Map() }));
      session.offsets.set(append, session.count);
      if (append.events.length > 0) {
        batchIds.push(append.batchId);
        batchSessions.push(append.sessionId);
        batchOffsets.push(session.count);
        batchCounts.push(append.events.length);
      }
      for (const body of append.bodies) {
        eventSessions.push(append.sessionId);
        eventOffsets.push(session.count);
        bodies.push(body);
        session.count += 1;
      }
    }
    const sessionIds = [...perSession.keys()];
    const result = await this.options.pool.query<{ session_id: string; base: number }>(this.options.queries.appendGroup, [
      sessionIds,
      sessionIds.map((id) => perSession.get(id)!.count),
      batchIds,
      batchSessions,
      batchOffsets,
      batchCounts,
      eventSessions,
      eventOffsets,
      bodies,
    ]);
    const bases = new Map<string, { firstSeq: number; offsets: Map<PendingAppend, number> }>();
    for (const row of result.rows) bases.set(row.session_id, { firstSeq: row.base + 1, offsets: perSession.get(row.session_id)!.offsets });
    return bases;
  }

  /** Resolves the appends an earlier attempt committed; returns the others. */
  private async settleCommitted(group: readonly PendingAppend[]): Promise<PendingAppend[]> {
    const found = await this.options.pool.query<{ batch_id: string; first_seq: number }>(this.options.queries.committedBatches, [
      group.map((append) => append.batchId),
    ]);
    const firstSeqs = new Map(found.rows.map((row) => [row.batch_id, row.first_seq]));
    const left: PendingAppend[] = [];
    for (const append of group) {
      const firstSeq = firstSeqs.get(append.batchId);
      if (firstSeq !== undefined) append.resolve(placed(append, firstSeq));
      else left.push(append);
    }
    return left;
  }

  private gaveUp(error: unknown, started: number, outcomeUnknown: boolean): StoreError {
    const { host, port, database } = this.options.target;
    const cause = storeErrorFrom(error, this.options.target, 'append events');
    const seconds = Math.round((Date.now() - started) / 1000);
    const message = outcomeUnknown
      ? `Lost the connection to PostgreSQL at ${host}:${port} (database "${database}") while appending, and could not get it back within ${seconds} s ` +
        `(${cause.message}). The events may or may not be stored: once the server is back, read the log (its last seq) before appending them again.`
      : `Could not append: PostgreSQL at ${host}:${port} (database "${database}") refused connections for ${seconds} s (${cause.message}). ` +
        'Nothing was stored; append again once the server is back.';
    return new StoreError('STORE_UNAVAILABLE', message, { fault: 'system', cause: error, data: { ...cause.data, outcomeUnknown } });
  }
}

/** The stored text of an event: its JSON without `sessionId` and `seq`, which are columns. */
function bodyOf(event: StreamEvent): string {
  const { sessionId: _sessionId, seq: _seq, ...rest } = event;
  return JSON.stringify(rest);
}

function placed(append: PendingAppend, firstSeq: number): StreamEvent[] {
  append.events.forEach((event, index) => (event.seq = firstSeq + index));
  return append.events;
}
