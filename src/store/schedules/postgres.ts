import type { PostgresStoreOptions } from '../postgres/options.js';
import type { ScheduleStore } from './schedule-store.js';

/**
 * A ScheduleStore on PostgreSQL, in the same database and schema as the session, draft and run
 * stores, so several servers share their schedules and each firing is claimed by one of them. It
 * opens a pool of its own (`poolSize`, default 2).
 *
 * The implementation, and `pg` with it, load on the first call.
 */
export async function createPostgresScheduleStore(options: PostgresStoreOptions): Promise<ScheduleStore> {
  const { openPostgresScheduleStore } = await import('./postgres-store.js');
  return openPostgresScheduleStore(options);
}
