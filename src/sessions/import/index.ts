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
/** The store view that builds a deferred import's events before its log is read (the session manager uses it already). */
export { withImportedSessions } from './imported-store.js';
