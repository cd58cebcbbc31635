export * from './records.js';
export * from './session-store.js';
export * from './errors.js';
export * from './memory-store.js';
export * from './file-store.js';
export * from './keyed-queue.js';
export * from './data-folder.js';
export * from './postgres/index.js';
export * from './draft-records.js';
export * from './draft-store.js';
export { MAX_LEASE_TTL_MS, type DraftLeaseResult } from './draft-lease.js';
export type { DraftStoreHome } from './draft-store-home.js';
export { createMemoryDraftStore } from './memory-draft-store.js';
export { createFileDraftStore } from './file-draft-store.js';
export { readRoleFolder } from './draft-files.js';
export * from './migrate.js';
export {
  migrateDraftStore,
  type DraftLayerReport,
  type DraftRecordMigration,
  type DraftStoreSide,
  type ProjectDigest,
  type ProjectVerification,
} from './draft-migrate.js';
export { digestProject } from './draft-digest.js';
export * from './run-records.js';
export * from './run-store.js';
export { createMemoryRunStore } from './memory-run-store.js';
export { createFileRunStore } from './file-run-store.js';
export { migrateRuns, type RunMigration, type RunMigrationReport, type RunMigrationStatus } from './run-migrate.js';
export { shareStore, type SharedStore } from './shared-store.js';
export { connectSocketStore, serveStoreOnSocket, storeSocketPath, type StoreSocketServer } from './socket-store.js';
