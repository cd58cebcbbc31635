export * from './session-manager.js';
export * from './create-session-manager.js';
export { openDataFolderStore } from './data-folder-store.js';
export * from './session-manager-types.js';
export * from './session-ids.js';
export * from './errors.js';
export { TypedEmitter } from './typed-emitter.js';
export * from './turn-runner.js';
export * from './agent-descriptions.js';
export * from './checkpoint-format.js';
export * from './compaction.js';
export * from './compaction-controller.js';
export * from './context-builder.js';
export * from './projection.js';
export * from './request-builder.js';
export {
  RalphLoopPatchSchema,
  type AgentTypeSettings,
  type PreviewedRequest,
  type RalphLoopPatch,
  type RequestOptions,
  type ResolvedSettings,
} from './session-requests.js';
export * from './summarizer.js';
export * from './import/index.js';
export { DEFAULT_CHANGE_POLL_MS, type FollowStoreChangesOptions } from './store-changes.js';
export * from './backend-move.js';
export { parseForkPoint, type ForkSessionOptions } from './session-fork.js';
export { hookNotice, TurnHooks } from './turn-hooks.js';
export * from './file-snapshots/index.js';
export {
  activeCheckpoint,
  activePath,
  checkpointsOnPath,
  onPath,
  readActiveEvents,
  readActiveHistory,
  type HistoryPath,
  type HistoryRange,
} from './history-path.js';
export {
  REWIND_RESTORES,
  type BranchInfo,
  type FileRestorer,
  type FileRestoreResult,
  type RewindOptions,
  type RewindRestore,
  type RewindResult,
} from './session-history.js';
