export * from './record-format.js';
export * from './sessions/records.js';
export * from './sessions/session-store.js';
export * from './sessions/session-page.js';
export * from './sessions/session-search.js';
export * from './errors.js';
export * from './sessions/memory-store.js';
export * from './sessions/file-store.js';
export * from './keyed-queue.js';
export * from './data-folder.js';
export * from './postgres/options.js';
export { createPostgresStore } from './sessions/postgres.js';
export * from './drafts/records.js';
export * from './drafts/draft-store.js';
export { MAX_LEASE_TTL_MS, type DraftLeaseHolder, type DraftLeaseResult } from './drafts/lease.js';
export type { DraftStoreHome } from './drafts/home.js';
export { createMemoryDraftStore } from './drafts/memory-store.js';
export { createFileDraftStore } from './drafts/file-store.js';
export { readRoleFolder } from './drafts/files.js';
export { createPostgresDraftStore } from './drafts/postgres.js';
export type { PostgresDraftStoreOptions } from './drafts/postgres-options.js';
export * from './sessions/migrate.js';
export {
  migrateDraftStore,
  type DraftLayerReport,
  type DraftRecordMigration,
  type DraftStoreSide,
  type ProjectDigest,
  type ProjectVerification,
} from './drafts/migrate.js';
export { digestProject } from './drafts/digest.js';
export * from './runs/records.js';
export * from './runs/run-store.js';
export { createMemoryRunStore } from './runs/memory-store.js';
export { createFileRunStore } from './runs/file-store.js';
export { createPostgresRunStore } from './runs/postgres.js';
export { migrateRuns, type RunMigration, type RunMigrationReport, type RunMigrationStatus } from './runs/migrate.js';
export { shareStore, type SharedStore } from './sessions/shared-store.js';
export {
  connectSocketStore,
  serveStoreOnSocket,
  storeSocketPath,
  type StoreSocketServer,
} from './sessions/socket-store.js';
export * from './schedules/records.js';
export * from './schedules/schedule-store.js';
export { createMemoryScheduleStore } from './schedules/memory-store.js';
export { createFileScheduleStore, type FileScheduleStoreOptions } from './schedules/file-store.js';
export { createPostgresScheduleStore } from './schedules/postgres.js';
