export * from './errors.js';
export * from './file-snapshots.js';
export { FileSnapshotSchema, type FileSnapshot } from './snapshot-log.js';
