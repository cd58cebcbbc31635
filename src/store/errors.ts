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
  /** A write failed for want of space (ENOSPC, or EDQUOT: the user's disk quota); nothing acknowledged is lost. */
  | 'DISK_FULL';

export class StoreError extends ParleyError {
  declare readonly code: StoreErrorCode;
  constructor(code: StoreErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, options);
  }
}
