/**
 * What the three PostgreSQL stores (sessions, drafts, runs) are opened with. A leaf module: the lazy
 * openers and the implementations they load both import it, so neither imports the other.
 */
export interface PostgresStoreOptions {
  /** `postgres://user:password@host:5432/database`. */
  connectionString: string;
  /** The schema Parley's tables live in (default `parley`); created when missing. */
  schema?: string;
  /** Connections at most (default 10). */
  poolSize?: number;
  /** How long an append whose connection failed is retried on a new one before it fails (default 30 s). */
  retryForMs?: number;
  /** How long connecting may take before the server counts as unreachable (default 10 s). */
  connectTimeoutMs?: number;
  /**
   * How long a statement may go unanswered before its connection counts as lost (default 60 s): a
   * half-open connection (a network partition) never errors otherwise. Appends wait at most what
   * is left of `retryForMs`. Migrations are not bounded.
   */
  answerTimeoutMs?: number;
  /**
   * Open only a schema that already holds Parley's tables: a missing one is refused with
   * `STORE_SCHEMA_MISSING` and nothing is created (for reading a database, as `parley migrate --from` does).
   */
  existingOnly?: boolean;
  /**
   * Check every session's log for messages the search index lacks, once, as the store opens
   * (default true): what rows written into the tables by other means left. Without it, the search
   * index is kept from the append groups not yet indexed alone, which is all a store's own appends
   * need: a short-lived reader (`parley search`) skips the scan of every session.
   */
  sweepSearchIndex?: boolean;
}

/** The PostgreSQL schema Parley's tables go in when none is given. */
export const DEFAULT_POSTGRES_SCHEMA = 'parley';
