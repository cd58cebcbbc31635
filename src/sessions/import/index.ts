/** Importing native transcripts (Claude Code, Gemini CLI, the seeds' layout) as read-only Parley sessions. */
export {
  importTranscripts,
  type ImportOptions,
  type ImportProgress,
  type ImportResult,
  type ImportStatus,
  type ImportedSession,
} from './import-transcripts.js';
export { discoverImportSources, type DiscoveryResult, type ImportSourceFiles } from './discover.js';
export { ImportError, type ImportErrorCode } from './errors.js';
export { importedSessionId, IMPORT_ID_PREFIX, type ImportSource } from './session-ids.js';
export { watchTranscripts, type TranscriptWatcher, type WatchTranscriptsOptions } from './watch-transcripts.js';
export { nativeSessionFolders, type NativeSessionFolder } from './native-folders.js';
