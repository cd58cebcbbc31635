import type { DraftStoreHome } from '../drafts/home.js';
import type { DraftStore } from '../drafts/draft-store.js';
import type { RunStore } from '../runs/run-store.js';
import type { SessionStore } from '../sessions/session-store.js';

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
   * Open only a schema that already holds Parley's tables: a missing one is refused with
   * `STORE_SCHEMA_MISSING` and nothing is created (for reading a database, as `parley migrate --from` does).
   */
  existingOnly?: boolean;
}

export const DEFAULT_POSTGRES_SCHEMA = 'parley';

/**
 * A SessionStore on PostgreSQL: many processes may share one database. Migrations run here, before
 * the store is handed out; a bad connection string, refused password, unreachable server, missing
 * rights or a too-new schema each fail with one StoreError that says what to fix.
 *
 * The implementation, and `pg` with it, load on the first call: a process on the file store never
 * loads a database client.
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<SessionStore> {
  const { openPostgresStore } = await import('../sessions/postgres-store.js');
  return openPostgresStore(options);
}

export interface PostgresDraftStoreOptions extends PostgresStoreOptions {
  /**
   * The project this server runs in (`parley serve`'s folder): listed first and marked home, with
   * the folders given here (each server reports its own checkout). Registered in the database on open.
   */
  home: DraftStoreHome;
  /**
   * Register the home project on open when the database does not hold it (default true). False
   * writes nothing on open: until a project of the home's name is created, none is listed as home
   * (`parley migrate` opens both sides so, and creates the home project with the source's
   * description and creation time). With `existingOnly`, the home is never registered either.
   */
  registerHome?: boolean;
}

/**
 * A DraftStore on PostgreSQL (projects, tasks, drafts, draft leases, role files), in the same
 * database and schema as `createPostgresStore`'s tables, so a server on PostgreSQL keeps no state on
 * its own disk. One draft per channel and per task is held by the database's unique indexes; draft
 * leases expire by the database's clock. It opens a pool of its own (`poolSize`, default 4).
 */
export async function createPostgresDraftStore(options: PostgresDraftStoreOptions): Promise<DraftStore> {
  const { openPostgresDraftStore } = await import('../drafts/postgres-store.js');
  return openPostgresDraftStore(options);
}

/**
 * A RunStore on PostgreSQL (durable harness runs and their journals), in the same database and
 * schema as the session and draft stores. It opens a pool of its own (`poolSize`, default 4).
 */
export async function createPostgresRunStore(options: PostgresStoreOptions): Promise<RunStore> {
  const { openPostgresRunStore } = await import('../runs/postgres-store.js');
  return openPostgresRunStore(options);
}
