import type { DraftStore } from './draft-store.js';
import type { PostgresDraftStoreOptions } from './postgres-options.js';

/**
 * A DraftStore on PostgreSQL (projects, tasks, drafts, draft leases, role files), in the same
 * database and schema as `createPostgresStore`'s tables, so a server on PostgreSQL keeps no state on
 * its own disk. One draft per channel and per task is held by the database's unique indexes; draft
 * leases expire by the database's clock. It opens a pool of its own (`poolSize`, default 4).
 *
 * The implementation, and `pg` with it, load on the first call.
 */
export async function createPostgresDraftStore(options: PostgresDraftStoreOptions): Promise<DraftStore> {
  const { openPostgresDraftStore } = await import('./postgres-store.js');
  return openPostgresDraftStore(options);
}
