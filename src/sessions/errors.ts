import { ParleyError, type ParleyErrorOptions } from '../conversation/index.js';

/** The codes a `SessionError` carries. */
export type SessionErrorCode =
  | 'SESSION_NOT_FOUND'
  | 'INVALID_ID'
  | 'INVALID_INPUT'
  | 'FORK_POINT_NOT_FOUND'
  | 'BRANCH_NOT_FOUND'
  | 'CHECKPOINT_NOT_FOUND'
  | 'CHECKPOINT_NOT_ON_BRANCH'
  | 'TURN_IN_PROGRESS'
  | 'FILE_SNAPSHOTS_NOT_CONFIGURED'
  | 'READ_ONLY_SESSION'
  | 'SESSION_ARCHIVED'
  | 'MANAGER_CLOSED'
  | 'COMPACTION_FAILED'
  | 'COMPACTION_IN_PROGRESS';

/** A session operation failed (no such session, a bad id or scope, a closed manager); `code` says which. */
export class SessionError extends ParleyError {
  declare readonly code: SessionErrorCode;
  constructor(code: SessionErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, options);
  }
}
