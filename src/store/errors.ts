import { ParleyError, type ParleyErrorOptions } from '../conversation/index.js';

/** Stable codes of store failures. */
export type StoreErrorCode =
  | 'INVALID_ID'
  | 'SESSION_NOT_FOUND'
  | 'SESSION_EXISTS'
  | 'CORRUPT_FILE'
  | 'UNSUPPORTED_FORMAT_VERSION'
  | 'STORE_LOCKED'
  | 'STORE_CLOSED'
  | 'STORE_IO'
  /** Draft stores (draft-store.ts). */
  | 'PROJECT_NOT_FOUND'
  | 'PROJECT_EXISTS'
  | 'TASK_NOT_FOUND'
  | 'TASK_EXISTS'
  /** A claim found the channel or the task already held by an active draft. */
  | 'DRAFT_ALREADY_ACTIVE'
  | 'DRAFT_NOT_FOUND'
  /** Run stores (run-store.ts). */
  | 'RUN_NOT_FOUND'
  | 'RUN_EXISTS'
  /** Schedule stores (schedule-store.ts). */
  | 'SCHEDULE_NOT_FOUND'
  | 'SCHEDULE_EXISTS'
  /** A write failed for want of space (ENOSPC, or EDQUOT: the user's disk quota); nothing acknowledged is lost. */
  | 'DISK_FULL'
  /** PostgreSQL store: the connection string cannot be parsed. */
  | 'STORE_BAD_CONNECTION_STRING'
  /** PostgreSQL store: the server cannot be reached, or the connection was lost and not regained in time. */
  | 'STORE_UNAVAILABLE'
  /** PostgreSQL store: the server refused the role or its password. */
  | 'STORE_AUTH_FAILED'
  /** PostgreSQL store: the role may not create or use Parley's tables. */
  | 'STORE_PERMISSION_DENIED'
  /** PostgreSQL store: the database's schema was made by a newer Parley. */
  | 'STORE_SCHEMA_TOO_NEW'
  /** PostgreSQL store opened with `existingOnly`: the schema holds no Parley tables. */
  | 'STORE_SCHEMA_MISSING';

/** A store could not do what was asked (not found, a conflict, a corrupt or newer file); `code` says which. */
export class StoreError extends ParleyError {
  declare readonly code: StoreErrorCode;
  constructor(code: StoreErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, options);
  }
}

/**
 * Something a store noticed and recovered from without failing the call: a torn last log line
 * set aside, a stray temp file removed. Surfaced so a user can see it, never swallowed.
 */
export interface StoreWarning {
  code:
    | 'TORN_LOG_TAIL'
    | 'STRAY_TEMP_FILE'
    | 'UNREADABLE_SESSION'
    | 'UNREADABLE_FILE'
    | 'STALE_LOCK'
    | 'SESSION_RECORD_NOT_SAVED'
    | 'JOURNAL_SYNC_FAILED'
    /** A file store index (listing or search) was missing, damaged or behind, and was rebuilt from the sessions. */
    | 'INDEX_REBUILT'
    /** An index could not be written; the appends and updates it follows are durable, and it catches up at the next open. */
    | 'INDEX_WRITE_FAILED';
  message: string;
  sessionId?: string;
  file?: string;
}
