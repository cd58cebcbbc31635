import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { WorkspaceError } from './errors.js';
import type { ResolvedPath } from './workspace-paths.js';

/**
 * Where the file tools (read_file, edit_file, write_file) read and write text: the local disk by
 * default, or an editor's buffers (over ACP), so an agent sees unsaved changes and its edits land
 * in the editor. Targets arrive confined already (resolved inside the project folder, protected
 * folders refused for writes); an implementation only moves text. Search and listing (grep, glob,
 * list_files) and commands always use the disk.
 */
export interface WorkspaceFiles {
  /** The file's text, or undefined when there is no such file. */
  read(target: ResolvedPath): Promise<string | undefined>;
  /** Replaces (or creates) the file; must not leave half a file behind. */
  write(target: ResolvedPath, content: string): Promise<void>;
}

/** The local disk: binary files and folders refused, writes atomic. */
export const diskFiles: WorkspaceFiles = {
  read: (target) => readTextFile(target.absolute, target.relative),
  write: (target, content) => writeFileAtomically(target.absolute, content),
};

/** A file's text, or undefined when it does not exist. Refuses folders and binary files clearly. */
export async function readTextFile(absolute: string, shown: string): Promise<string | undefined> {
  let buffer: Buffer;
  try {
    buffer = await fs.readFile(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'EISDIR')
      throw new WorkspaceError(
        'INVALID_INPUT',
        `"${shown}" is a folder, not a file; use list_files to see what it holds.`,
        { data: { path: shown } },
      );
    throw error;
  }
  if (buffer.subarray(0, 8_192).includes(0)) {
    throw new WorkspaceError(
      'INVALID_INPUT',
      `"${shown}" is a binary file (${buffer.length} bytes); these tools read and edit text only.`,
      { data: { path: shown, bytes: buffer.length } },
    );
  }
  return buffer.toString('utf8');
}

/**
 * Replaces a file's content by write-temp-then-rename in its folder, keeping its mode, so a crash
 * leaves the old file or the new one, never half of one. Missing folders are created.
 */
export async function writeFileAtomically(absolute: string, content: string): Promise<void> {
  const folder = path.dirname(absolute);
  await fs.mkdir(folder, { recursive: true });
  const mode = await fs.stat(absolute).then(
    (stats) => stats.mode & 0o7777,
    () => undefined,
  );
  const temporary = path.join(folder, `.${path.basename(absolute)}.parley-${randomUUID().slice(0, 8)}.tmp`);
  try {
    const handle = await fs.open(temporary, 'w', mode ?? 0o666);
    try {
      await handle.writeFile(content, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (mode !== undefined) await fs.chmod(temporary, mode);
    await fs.rename(temporary, absolute);
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw error;
  }
}
