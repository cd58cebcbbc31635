import { ParleyError, type ParleyErrorOptions } from '../conversation/index.js';

export type SessionErrorCode =
  | 'SESSION_NOT_FOUND'
  | 'INVALID_ID'
  | 'INVALID_INPUT'
  | 'READ_ONLY_SESSION'
  | 'SESSION_ARCHIVED'
  | 'MANAGER_CLOSED'
  | 'COMPACTION_FAILED'
  | 'COMPACTION_IN_PROGRESS';

export class SessionError extends ParleyError {
  declare readonly code: SessionErrorCode;
  constructor(code: SessionErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, options);
  }
}
