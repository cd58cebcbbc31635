import { promises as fs } from 'node:fs';
import { join } from 'node:path';
import { ensureDirectory, ioError, isErrno } from './atomic-file.js';

/** Files of a data folder that are secret or only mean something on this machine: never committed. */
export const PRIVATE_DATA_FILES = ['/token', '/server.json'] as const;

/**
 * The `.gitignore` Parley writes into a data folder it makes. The data folder sits inside the
 * project, so without it a `git add -A` stages the server's token and every transcript (which
 * often hold pasted secrets). Tools that keep their data in the repository do the same.
 */
export const DATA_FOLDER_GITIGNORE = [
  '# Written by Parley: nothing in this data folder is committed unless you choose to.',
  '# Transcripts often hold pasted secrets. To keep sessions in git on purpose, replace the `*`',
  '# line (see "Keeping sessions in git" in Parley\'s README). Parley keeps the lines for the',
  "# server's token and address in this file whatever else it says.",
  '*',
  ...PRIVATE_DATA_FILES,
  '',
].join('\n');

/**
 * Makes the data folder (mode 0700) if it is missing and sees that its `.gitignore` exists: a
 * missing one is written whole; one a person edited keeps their lines and gains any of
 * `PRIVATE_DATA_FILES` it lacks, so the token and `server.json` never reach git.
 */
export async function prepareDataFolder(dataDir: string): Promise<void> {
  try {
    await fs.mkdir(dataDir, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw ioError('create the data folder', dataDir, error);
  }
  await ensureDirectory(dataDir);
  const path = join(dataDir, '.gitignore');
  let current: string;
  try {
    current = await fs.readFile(path, 'utf8');
  } catch (error) {
    if (!isErrno(error, 'ENOENT')) throw ioError('read', path, error);
    try {
      // `wx`: when two processes prepare the folder at once, one writes and the other reads it next time.
      await fs.writeFile(path, DATA_FOLDER_GITIGNORE, { flag: 'wx', mode: 0o644 });
    } catch (writeError) {
      if (!isErrno(writeError, 'EEXIST')) throw ioError('write', path, writeError);
    }
    return;
  }
  const lines = new Set(current.split(/\r?\n/).map((line) => line.trim()));
  const missing = PRIVATE_DATA_FILES.filter((entry) => !lines.has(entry));
  if (missing.length === 0) return;
  const separator = current.length === 0 || current.endsWith('\n') ? '' : '\n';
  try {
    await fs.appendFile(path, `${separator}# Never committed (added by Parley):\n${missing.join('\n')}\n`);
  } catch (error) {
    throw ioError('write', path, error);
  }
}
