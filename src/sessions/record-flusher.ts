import type { SessionRecord, StoreWarning } from '../store/index.js';
import type { LiveSession } from './live-sessions.js';

/** Least time between two writes of one session's session.json while its events stream. */
export const RECORD_FLUSH_INTERVAL_MS = 200;
/** After failed session.json rewrites (a full disk) the wait doubles, up to this. */
const RECORD_RETRY_MAX_MS = 5_000;

export interface RecordFlusherOptions {
  /** Replaces the session's session.json with the record. */
  write: (sessionId: string, record: SessionRecord) => Promise<unknown>;
  /** Once the manager is closed, a record is written at once instead of after the interval. */
  closed: () => boolean;
  reportWarning: (warning: StoreWarning) => void;
}

/**
 * session.json is a cache of what the log implies (stats, metrics, activity). It is rewritten
 * atomically but off the append path, coalesced to one write in flight per session: on load the log wins.
 */
export class RecordFlusher {
  private readonly flushing = new Map<string, Promise<void>>();
  private readonly dirty = new Set<string>();
  private readonly pauses = new Map<string, () => void>();
  /** When each session's record was last written (performance.now()). */
  private readonly writtenAt = new Map<string, number>();
  /** Failed session.json rewrites in a row, per session. */
  private readonly failures = new Map<string, number>();

  constructor(private readonly options: RecordFlusherOptions) {}

  /** Writes the session's current record soon: at most one write in flight, at most one per interval. */
  schedule(sessionId: string, live: LiveSession): void {
    this.dirty.add(sessionId);
    if (this.flushing.has(sessionId)) return;
    const flush = (async () => {
      while (this.dirty.has(sessionId)) {
        // While events stream, rewriting it on every append would compete with the log's own fsyncs.
        const failures = this.failures.get(sessionId) ?? 0;
        const interval = Math.min(RECORD_FLUSH_INTERVAL_MS * 2 ** failures, RECORD_RETRY_MAX_MS);
        const wait = (this.writtenAt.get(sessionId) ?? Number.NEGATIVE_INFINITY) + interval - performance.now();
        const closed = this.options.closed();
        if (wait > 0 && !closed) await this.pause(sessionId, wait, failures > 0);
        this.dirty.delete(sessionId);
        const record = live.record;
        this.writtenAt.set(sessionId, performance.now());
        try {
          await this.options.write(sessionId, record);
          this.failures.delete(sessionId);
        } catch (error) {
          // Retried until written (at close, once more): the log holds every event meanwhile, and wins on load.
          const nowClosed = this.options.closed();
          this.failures.set(sessionId, failures + 1);
          if (!nowClosed) this.dirty.add(sessionId);
          if (failures === 0 || nowClosed) {
            this.options.reportWarning({
              code: 'SESSION_RECORD_NOT_SAVED',
              sessionId,
              message:
                `Could not rewrite session.json of "${sessionId}": ${error instanceof Error ? error.message : String(error)} ` +
                `Nothing is lost: the log holds every event and wins on load. ${nowClosed ? 'The manager is closed; it is rebuilt from the log on the next load.' : 'Retrying until it is written.'}`,
            });
          }
        }
      }
    })().finally(() => this.flushing.delete(sessionId));
    this.flushing.set(sessionId, flush);
  }

  /** True while the session's record waits to be written or is being written. */
  pending(sessionId: string): boolean {
    return this.dirty.has(sessionId) || this.flushing.has(sessionId);
  }

  /** Forgets when the session's record was last written, unless a write is pending (the manager let the session go). */
  release(sessionId: string): void {
    if (!this.pending(sessionId)) this.writtenAt.delete(sessionId);
  }

  /** Records waiting out their interval are written now; settles when every write has ended. */
  async flushAll(): Promise<void> {
    for (const wake of this.pauses.values()) wake();
    await Promise.allSettled([...this.flushing.values()]);
  }

  /** Waits out the interval, or until `flushAll` needs the record written now. A retry's wait does not keep the process alive. */
  private pause(sessionId: string, ms: number, retrying: boolean): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer);
        this.pauses.delete(sessionId);
        resolve();
      };
      const timer = setTimeout(wake, ms);
      if (retrying) timer.unref();
      this.pauses.set(sessionId, wake);
    });
  }
}
