import { promises as fs } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { StoreError } from './errors.js';

/**
 * Durable file replacement: every file other than a log is written to a temp file in the store's
 * `tmp/` folder, fsynced, then renamed (or linked) into place and its folder fsynced. A crash leaves
 * either the old file or the new one, never a mix; leftovers in `tmp/` are removed on the next open.
 */

let counter = 0;

/** A fresh temp path in `tmpDir`, named after the file it will become (for the stray-file warning). */
export function tempPath(tmpDir: string, target: string): string {
  counter += 1;
  return join(tmpDir, `${basename(target)}.${process.pid}-${counter}-${Math.random().toString(36).slice(2, 8)}.tmp`);
}

/** Writes `content` to a new file and fsyncs it. */
export async function writeDurably(path: string, content: string | Uint8Array, flag: 'wx' | 'w' = 'wx'): Promise<void> {
  const handle = await fs.open(path, flag);
  try {
    await handle.writeFile(content);
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** fsync of a folder, so a rename or a new entry in it survives a crash. */
export async function syncDirectory(path: string): Promise<void> {
  const handle = await fs.open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Replaces `target` atomically with `content`. On failure (a full disk included) `target` is left
 * as it was and the temp file is removed; `sessionId` names the session in the error.
 */
export async function replaceFile(tmpDir: string, target: string, content: string, sessionId?: string): Promise<void> {
  const temp = tempPath(tmpDir, target);
  try {
    await writeDurably(temp, content);
    await fs.rename(temp, target);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw ioError('write', target, error, sessionId);
  }
  await syncDirectory(dirname(target)).catch((error: unknown) => {
    throw ioError('sync the folder of', target, error, sessionId);
  });
}

/**
 * Creates `target` with `content`, refusing to overwrite an existing file (`link` fails with
 * EEXIST where `rename` would replace): for files that must never be overwritten, like checkpoints.
 * Returns false when the file already exists. On failure nothing is left behind: no temp file, and
 * no `target` either when the folder could not be synced after the link (a rejected write must not
 * leave a file that may or may not survive a crash).
 */
export async function createFileOnce(
  tmpDir: string,
  target: string,
  content: string,
  sessionId?: string,
): Promise<boolean> {
  const temp = tempPath(tmpDir, target);
  try {
    await writeDurably(temp, content);
    await fs.link(temp, target);
  } catch (error) {
    if (isErrno(error, 'EEXIST')) return false;
    throw ioError('write', target, error, sessionId);
  } finally {
    await fs.rm(temp, { force: true });
  }
  try {
    await syncDirectory(dirname(target));
  } catch (error) {
    await fs.rm(target, { force: true });
    throw ioError('sync the folder of', target, error, sessionId);
  }
  return true;
}

/** Creates `path` and any missing parents, fsyncing each parent a new folder was added to. */
export async function ensureDirectory(path: string): Promise<void> {
  try {
    await fs.mkdir(path);
  } catch (error) {
    if (isErrno(error, 'EEXIST')) return;
    if (!isErrno(error, 'ENOENT')) throw ioError('create the folder', path, error);
    await ensureDirectory(dirname(path));
    try {
      await fs.mkdir(path);
    } catch (again) {
      if (!isErrno(again, 'EEXIST')) throw ioError('create the folder', path, again);
      return;
    }
  }
  await syncDirectory(dirname(path));
}

export function isErrno(error: unknown, code: string): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === code;
}

/** Disk-space errors: no space left on the device, or the user's quota is used up. */
const DISK_FULL_ERRNOS = new Set(['ENOSPC', 'EDQUOT']);

/**
 * A failed file operation as a typed StoreError: DISK_FULL when space ran out, STORE_IO otherwise.
 * `data` names the file, the session when known, and the system's errno code.
 */
export function ioError(action: string, path: string, cause: unknown, sessionId?: string): StoreError {
  if (cause instanceof StoreError) return cause;
  const errno = typeof cause === 'object' && cause !== null ? (cause as { code?: unknown }).code : undefined;
  const data = {
    file: path,
    ...(sessionId === undefined ? {} : { sessionId }),
    ...(typeof errno === 'string' ? { errno } : {}),
  };
  const subject = sessionId === undefined ? path : `${path} (session "${sessionId}")`;
  if (typeof errno === 'string' && DISK_FULL_ERRNOS.has(errno)) {
    return new StoreError(
      'DISK_FULL',
      `Could not ${action} ${subject}: the disk is full (${errno}). This write was not saved; everything saved before it is intact. ` +
        `Free space on the disk that holds ${dirname(path)}, then try again.`,
      { fault: 'system', data, cause },
    );
  }
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new StoreError(
    'STORE_IO',
    `Could not ${action} ${subject}: ${reason}. Check that the disk has space and the folder is writable.`,
    {
      fault: 'system',
      data,
      cause,
    },
  );
}
