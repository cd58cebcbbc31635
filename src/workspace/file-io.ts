import { randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { WorkspaceError } from './errors.js';

/** A file's text, or undefined when it does not exist. Refuses folders and binary files clearly. */
export async function readTextFile(absolute: string, shown: string): Promise<string | undefined> {
  let buffer: Buffer;
  try {
    buffer = await fs.readFile(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'EISDIR') throw new WorkspaceError('INVALID_INPUT', `"${shown}" is a folder, not a file; use list_files to see what it holds.`, { data: { path: shown } });
    throw error;
  }
  if (buffer.subarray(0, 8_192).includes(0)) {
    throw new WorkspaceError('INVALID_INPUT', `"${shown}" is a binary file (${buffer.length} bytes); these tools read and edit text only.`, { data: { path: shown, bytes: buffer.length } });
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
  const mode = await fs.stat(absolute).then((stats) => stats.mode & 0o7777, () => undefined);
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
