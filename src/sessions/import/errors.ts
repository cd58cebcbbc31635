import { ParleyError, type ParleyErrorOptions } from '../../conversation/index.js';

/** The codes an `ImportError` carries. */
export type ImportErrorCode = 'IMPORT_PATH_NOT_FOUND' | 'NOTHING_TO_IMPORT' | 'IMPORT_ABORTED' | 'IMPORT_READ_FAILED';

/** A failed import: the path is missing or holds no transcript, reading failed, or the caller aborted. */
export class ImportError extends ParleyError {
  declare readonly code: ImportErrorCode;
  constructor(code: ImportErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, options);
  }
}

export function importAborted(path: string): ImportError {
  return new ImportError(
    'IMPORT_ABORTED',
    `The import of ${path} was aborted. What was written so far is kept; import the same path again to finish it.`,
    { fault: 'user', data: { path } },
  );
}
