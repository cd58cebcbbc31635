import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { describeIssues } from '../conversation/index.js';
import { DraftError } from './errors.js';

/**
 * JSON files of the draft layer (task.json, draft.json, projects.json). A write replaces the file
 * atomically: temp file, fsync, rename, fsync of the folder, so a crash at any instant leaves the
 * old file or the new one, never a torn one.
 */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  const folder = path.dirname(file);
  await fs.mkdir(folder, { recursive: true });
  const temp = path.join(folder, `.${path.basename(file)}.${randomUUID()}.tmp`);
  const handle = await fs.open(temp, 'w', 0o644);
  try {
    await handle.writeFile(`${JSON.stringify(value, null, 2)}\n`, 'utf8');
    await handle.sync();
  } finally {
    await handle.close();
  }
  try {
    await fs.rename(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw error;
  }
  await syncFolder(folder);
}

async function syncFolder(folder: string): Promise<void> {
  let handle: fs.FileHandle | undefined;
  try {
    handle = await fs.open(folder, 'r');
    await handle.sync();
  } catch {
    // Some file systems refuse fsync on a folder; the rename itself is still atomic.
  } finally {
    await handle?.close();
  }
}

/** Reads and validates a JSON file; undefined when it does not exist, CORRUPT_FILE naming the file and field otherwise. */
export async function readJsonFile<T extends z.ZodType>(file: string, schema: T): Promise<z.infer<T> | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new DraftError('CORRUPT_FILE', `${file} is not valid JSON (${(error as Error).message}). Fix or remove the file.`, {
      fault: 'user',
      data: { file },
    });
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new DraftError('CORRUPT_FILE', `${file} does not match its format: ${describeIssues(parsed.error.issues)}. Fix or remove the file.`, {
      fault: 'user',
      data: { file },
    });
  }
  return parsed.data;
}

export async function exists(file: string): Promise<boolean> {
  try {
    await fs.access(file);
    return true;
  } catch {
    return false;
  }
}

/** Folder names directly inside `folder` (none when it does not exist). */
export async function listFolders(folder: string): Promise<string[]> {
  try {
    const entries = await fs.readdir(folder, { withFileTypes: true });
    return entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}
