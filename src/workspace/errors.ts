import { ParleyError, type ParleyErrorOptions } from '../conversation/index.js';

/**
 * Errors of the workspace layer. Codes: `PATH_OUTSIDE_PROJECT` (a path that leaves the project
 * folder), `PATH_PROTECTED` (a write into `.git/` or Parley's data folder), `NOT_FOUND` (no such
 * file, an unknown approval request), `EDIT_NO_MATCH` / `EDIT_NOT_UNIQUE`, `INVALID_INPUT`.
 */
export class WorkspaceError extends ParleyError {
  constructor(code: string, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, { fault: 'model', ...options });
  }
}
