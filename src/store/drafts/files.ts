import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { describeIssues } from '../../conversation/index.js';
import { ioError, isErrno } from '../atomic-file.js';
import { DRAFT_FORMAT_VERSION } from './records.js';
import { corruptFile } from '../json-file.js';
import { StoreError } from '../errors.js';
import type { RoleText, RoleTextError } from './records.js';

// The file draft store's files: JSON replaced atomically beside itself, read and validated.

const ADVICE = 'Fix or remove the file.';

/**
 * Replaces `file` with `value` as two-space JSON: a temp file beside it, fsync, rename, fsync of
 * the folder, so a crash at any instant leaves the old file or the new one, never a torn one. The
 * temp file sits beside its target (not in the store's `tmp/`) because another project's data
 * folder may be on another file system, where a rename cannot reach.
 */
export async function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  await writeTextAtomic(file, `${JSON.stringify(value, null, 2)}\n`);
}

export async function writeTextAtomic(file: string, text: string): Promise<void> {
  const folder = path.dirname(file);
  const temp = path.join(folder, `.${path.basename(file)}.${randomUUID()}.tmp`);
  try {
    await fs.mkdir(folder, { recursive: true });
    const handle = await fs.open(temp, 'w', 0o644);
    try {
      await handle.writeFile(text, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, file);
  } catch (error) {
    await fs.rm(temp, { force: true });
    throw ioError('write', file, error);
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

/** Reads and validates a draft-layer JSON file; undefined when it does not exist, CORRUPT_FILE naming the file otherwise. */
export async function readJson<Schema extends z.ZodType>(
  file: string,
  schema: Schema,
): Promise<z.infer<Schema> | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return undefined;
    throw corruptFile(
      file,
      `it cannot be read (${error instanceof Error ? error.message : String(error)})`,
      ADVICE,
      error,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw corruptFile(file, `it is not valid JSON (${(error as Error).message})`, ADVICE, error);
  }
  const version =
    typeof raw === 'object' && raw !== null ? (raw as { formatVersion?: unknown }).formatVersion : undefined;
  if (typeof version === 'number' && version > DRAFT_FORMAT_VERSION) {
    throw new StoreError(
      'UNSUPPORTED_FORMAT_VERSION',
      `${file} has format version ${version}, but this Parley reads format version ${DRAFT_FORMAT_VERSION} at most. It was written by a newer Parley: upgrade Parley to open it.`,
      { fault: 'user', data: { file, formatVersion: version, supported: DRAFT_FORMAT_VERSION } },
    );
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw corruptFile(file, `it does not match its format (${describeIssues(parsed.error.issues)})`, ADVICE);
  }
  return parsed.data;
}

/** Names of the entries directly inside `folder` that satisfy `keep` (none when it does not exist), sorted. */
export async function listEntries(
  folder: string,
  keep: (entry: { name: string; isDirectory(): boolean; isFile(): boolean }) => boolean,
): Promise<string[]> {
  try {
    const entries = await fs.readdir(folder, { withFileTypes: true });
    return entries
      .filter(keep)
      .map((entry) => entry.name)
      .sort();
  } catch (error) {
    if (isErrno(error, 'ENOENT')) return [];
    throw ioError('list', folder, error);
  }
}

/**
 * Every `*.md` file of a roles folder with its text; a folder or file that cannot be read is
 * reported in `errors` (never thrown), so one bad file never hides the others.
 */
export async function readRoleFolder(rolesDir: string): Promise<{ files: RoleText[]; errors: RoleTextError[] }> {
  const files: RoleText[] = [];
  const errors: RoleTextError[] = [];
  let names: string[] = [];
  try {
    names = (await fs.readdir(rolesDir)).filter((name) => name.endsWith('.md')).sort();
  } catch (error) {
    if (!isErrno(error, 'ENOENT'))
      errors.push({ location: rolesDir, message: `The roles folder cannot be read: ${(error as Error).message}.` });
  }
  for (const name of names) {
    const location = path.join(rolesDir, name);
    try {
      files.push({ name: name.slice(0, -'.md'.length), location, text: await fs.readFile(location, 'utf8') });
    } catch (error) {
      errors.push({ location, message: `The role file cannot be read: ${(error as Error).message}.` });
    }
  }
  return { files, errors };
}
