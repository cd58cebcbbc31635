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

/** Replaces `target` atomically with `content`. */
export async function replaceFile(tmpDir: string, target: string, content: string): Promise<void> {
  const temp = tempPath(tmpDir, target);
  try {
    await writeDurably(temp, content);
    await fs.rename(temp, target);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw ioError('write', target, error);
  }
  await syncDirectory(dirname(target)).catch((error: unknown) => {
    throw ioError('sync the folder of', target, error);
  });
}

/**
 * Creates `target` with `content`, refusing to overwrite an existing file (`link` fails with
 * EEXIST where `rename` would replace): for files that must never be overwritten, like checkpoints.
 * Returns false when the file already exists.
 */
export async function createFileOnce(tmpDir: string, target: string, content: string): Promise<boolean> {
  const temp = tempPath(tmpDir, target);
  try {
    await writeDurably(temp, content);
    await fs.link(temp, target);
  } catch (error) {
    if (isErrno(error, 'EEXIST')) return false;
    throw ioError('write', target, error);
  } finally {
    await fs.rm(temp, { force: true });
  }
  await syncDirectory(dirname(target));
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

export function ioError(action: string, path: string, cause: unknown): StoreError {
  if (cause instanceof StoreError) return cause;
  const reason = cause instanceof Error ? cause.message : String(cause);
  return new StoreError('STORE_IO', `Could not ${action} ${path}: ${reason}. Check that the disk has space and the folder is writable.`, {
    fault: 'system',
    data: { file: path },
    cause,
  });
}
