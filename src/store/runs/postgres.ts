import type { PostgresStoreOptions } from '../postgres/options.js';
import type { RunStore } from './run-store.js';

/**
 * A RunStore on PostgreSQL (durable harness runs and their journals), in the same database and
 * schema as the session and draft stores. It opens a pool of its own (`poolSize`, default 4).
 *
 * The implementation, and `pg` with it, load on the first call.
 */
export async function createPostgresRunStore(options: PostgresStoreOptions): Promise<RunStore> {
  const { openPostgresRunStore } = await import('./postgres-store.js');
  return openPostgresRunStore(options);
}
