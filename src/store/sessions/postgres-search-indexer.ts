import type pg from 'pg';
import { isRetryableConflict } from '../postgres/errors.js';

export interface SearchIndexerOptions {
  pool: pg.Pool;
  /** `index_pending_messages($1, $2)` for a batch of sessions (postgres-queries.ts). */
  statement: string;
  /** How long after a commit the background run starts (default 100 ms). */
  delayMs?: number;
}

/** How long after a commit the messages it stored are indexed, at most (plus the run itself). */
export const INDEX_DELAY_MS = 100;
/** A run that loses a deadlock (two sessions' lock keys hashing alike) is run again, this often at most. */
const MAX_CONFLICT_RETRIES = 5;
/**
 * Sessions indexed per transaction, each under an advisory lock held to its end: the server's lock
 * table has room for 64 per connection by default (max_locks_per_transaction), shared by all.
 */
export const INDEX_BATCH_SESSIONS = 500;

/**
 * Keeps the PostgreSQL store's search index (`session_messages`) current, out of the appends'
 * transactions: the index is filled by the database function `index_pending_messages()`
 * (migrations 6 and 8), which indexes the sessions whose log is ahead of their search position,
 * whoever appended to them, a batch of sessions per transaction, and is safe to run from any number
 * of servers at once. A run calls it batch after batch until nothing is pending.
 *
 * A commit schedules a run `delayMs` later; the commits in between join it (one run per ~100 ms
 * under a steady stream of appends, never a timer reset that a steady stream would postpone for
 * ever). One background run at a time; a commit during a run schedules the next. A search calls
 * `catchUp()` first, which runs the function now and waits for it, so a search finds every
 * message acknowledged before it began, on this server or another; when nothing is pending the
 * function returns after one scan, taking no lock.
 *
 * Background runs are best effort: a failure (the server away) leaves the messages pending for
 * the next run, the next search, or the next store opened on the schema.
 */
export class SearchIndexer {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** A commit arrived during the background run: schedule another when it ends. */
  private again = false;
  /** The next run checks every session, not only the groups not yet indexed (see `sweep`). */
  private sweepNext = false;
  /** The sweep running now, which a search waits for. */
  private sweeping: Promise<void> | undefined;
  private stopped = false;
  private readonly delayMs: number;

  constructor(private readonly options: SearchIndexerOptions) {
    this.delayMs = options.delayMs ?? INDEX_DELAY_MS;
  }

  /** After a commit: index its messages soon. */
  schedule(delayMs = this.delayMs): void {
    if (this.stopped) return;
    if (this.running !== undefined) {
      this.again = true;
      return;
    }
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.running = this.index()
        .catch(() => undefined)
        .finally(() => {
          this.running = undefined;
          if (this.again) {
            this.again = false;
            this.schedule();
          }
        });
    }, delayMs);
    // A scheduled run never keeps a process alive: close() runs it, and the next store catches up.
    this.timer.unref();
  }

  /**
   * Soon, a run that checks every session's log, not only the groups not yet indexed: what a
   * server that stopped long ago left (its groups pruned), or rows written into the tables by
   * something other than a store. A store runs one as it opens.
   */
  sweep(): void {
    this.sweepNext = true;
    this.schedule(0);
  }

  /**
   * Indexes everything committed so far, now; rejects when the database does. A sweep owed or
   * running (the store just opened) is waited for: a search finds what it finds, too.
   */
  async catchUp(): Promise<void> {
    await this.sweeping?.catch(() => undefined);
    await this.index();
  }

  /** Stops scheduling; runs a run still scheduled, and waits for the one in flight. */
  async stop(): Promise<void> {
    this.stopped = true;
    const scheduled = this.timer !== undefined || this.again;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.again = false;
    await this.running;
    if (scheduled) await this.index().catch(() => undefined);
  }

  /** Every pending session, a batch per transaction, each starting after the last one's last id. */
  private index(): Promise<void> {
    const sweep = this.sweepNext;
    this.sweepNext = false;
    const run = this.runBatches(sweep);
    if (sweep) {
      this.sweeping = run;
      const done = () => {
        if (this.sweeping === run) this.sweeping = undefined;
      };
      run.then(done, done);
    }
    return run;
  }

  private async runBatches(sweep: boolean): Promise<void> {
    try {
      let after: string | null = null;
      do after = await this.indexBatch(after, sweep);
      while (after !== null);
    } catch (error) {
      // A sweep that failed (the server away) is owed still.
      this.sweepNext ||= sweep;
      throw error;
    }
  }

  private async indexBatch(after: string | null, sweep: boolean): Promise<string | null> {
    for (let conflicts = 0; ; conflicts += 1) {
      try {
        const { rows } = await this.options.pool.query<{ last_id: string | null }>(this.options.statement, [
          INDEX_BATCH_SESSIONS,
          after,
          sweep,
        ]);
        return rows[0]?.last_id ?? null;
      } catch (error) {
        if (!isRetryableConflict(error) || conflicts >= MAX_CONFLICT_RETRIES) throw error;
      }
    }
  }
}
