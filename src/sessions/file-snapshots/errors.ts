import { ParleyError, type ParleyErrorOptions } from '../../conversation/index.js';

/** The codes a `FileSnapshotError` carries. */
export type FileSnapshotErrorCode =
  /** The session has no file snapshots at all (no turn that may change files ran with snapshots on). */
  | 'NO_FILE_SNAPSHOTS'
  /** The point is not in the session, or no snapshot was taken at or before it on its branch. */
  | 'SNAPSHOT_NOT_FOUND'
  /** Files the user changed since the agent last touched them would be overwritten; `data.files` lists them. */
  | 'RESTORE_CONFLICT'
  /** git failed, or is not installed. */
  | 'SNAPSHOT_FAILED'
  | 'INVALID_INPUT';

/** A file snapshot or a restore failed; `code` says why, the message says what to do. Nothing was changed. */
export class FileSnapshotError extends ParleyError {
  declare readonly code: FileSnapshotErrorCode;
  constructor(code: FileSnapshotErrorCode, message: string, options: ParleyErrorOptions = {}) {
    super(code, message, options);
  }
}

/** A restore refused because it would overwrite files the user changed; `files` are their project paths. */
export class FileRestoreConflictError extends FileSnapshotError {
  readonly files: readonly string[];
  constructor(files: readonly string[], point: { sessionId: string; seq: number }) {
    const shown = files.slice(0, 20).join(', ') + (files.length > 20 ? `, and ${files.length - 20} more` : '');
    super(
      'RESTORE_CONFLICT',
      `Restoring the files of session ${point.sessionId} to seq ${point.seq} would overwrite ${files.length} ` +
        `file(s) changed since the agent last touched them: ${shown}. Nothing was changed. Keep a copy of ` +
        'your changes and restore again with overwrite, or leave the files as they are.',
      { fault: 'user', data: { files: [...files], sessionId: point.sessionId, seq: point.seq } },
    );
    this.files = files;
  }
}
