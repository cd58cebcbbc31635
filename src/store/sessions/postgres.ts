import type { PostgresStoreOptions } from '../postgres/options.js';
import type { SessionStore } from './session-store.js';

/**
 * A SessionStore on PostgreSQL: many processes may share one database. Migrations run here, before
 * the store is handed out; a bad connection string, refused password, unreachable server, missing
 * rights or a too-new schema each fail with one StoreError that says what to fix.
 *
 * The implementation, and `pg` with it, load on the first call: a process on the file store never
 * loads a database client.
 */
export async function createPostgresStore(options: PostgresStoreOptions): Promise<SessionStore> {
  const { openPostgresStore } = await import('./postgres-store.js');
  return openPostgresStore(options);
}
