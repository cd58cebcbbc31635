import { closeSync, lstatSync, openSync, readdirSync, readlinkSync, constants, type Dirent } from 'node:fs';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DESCENT, within } from './confined-files.js';

/**
 * Folders listed, and search results checked, so that a folder swapped for a symbolic link while a
 * tool works on it cannot show what lies outside the project. The same descent as
 * confined-files.ts: from the project folder one component at a time, each opened through the
 * folder held before it with `O_NOFOLLOW`, and here no link is followed at all (the paths given
 * are real paths, links already resolved by `WorkspacePaths`; a link met now was swapped in since).
 * The held folder is then read through `/proc/self/fd/<fd>`, which is that folder whatever its
 * name leads to now. Without `/proc`, folders are read by path, as the check alone allows.
 */

const { O_RDONLY, O_DIRECTORY, O_NOFOLLOW } = constants;

export type FolderEntryKind = 'file' | 'folder' | 'link' | 'other';

export interface FolderEntry {
  name: string;
  kind: FolderEntryKind;
  /** Bytes, for a file. */
  size: number;
  /** Where a link points, as written. */
  link?: string;
}

/** Why a folder could not be read: not there, a file, or a component is a link (swapped in since the check). */
export type FolderRefusal = 'missing' | 'not-a-folder' | 'link';

/** The entries of a folder inside the project, `relative` to `root` (both real paths), or why not. */
export async function readFolderConfined(root: string, relative: string): Promise<FolderEntry[] | FolderRefusal> {
  if (!DESCENT) return readFolderByPath(path.join(root, relative));
  const held = holdFolder(root, relative);
  if (typeof held !== 'number') return held;
  try {
    const entries = readdirSync(`/proc/self/fd/${held}`, { withFileTypes: true });
    return entries.map((entry) => describe(entry, within(held, entry.name)));
  } finally {
    closeSync(held);
  }
}

/**
 * Keeps the project-relative files that are, now, regular files inside the project: one reached
 * through a folder that was a link to the outside when it was found (a walk follows such a folder,
 * as any `readdir` by path does) is dropped. One listing per folder, however many files it holds.
 */
export async function filesStillInside(root: string, files: readonly string[]): Promise<string[]> {
  const byFolder = new Map<string, Set<string> | undefined>();
  const kept: string[] = [];
  for (const file of files) {
    const folder = path.posix.dirname(file);
    if (!byFolder.has(folder)) {
      const entries = await readFolderConfined(root, folder);
      byFolder.set(
        folder,
        typeof entries === 'string'
          ? undefined
          : new Set(entries.filter((entry) => entry.kind === 'file').map((entry) => entry.name)),
      );
    }
    if (byFolder.get(folder)?.has(path.posix.basename(file))) kept.push(file);
  }
  return kept;
}

/** Opens the folder by descent without following any link; the caller closes the descriptor. */
function holdFolder(root: string, relative: string): number | FolderRefusal {
  const components = relative.split('/').filter((component) => component !== '' && component !== '.');
  let folder = openSync(root, O_RDONLY | O_DIRECTORY);
  for (const name of components) {
    let next: number;
    try {
      next = openSync(within(folder, name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      // Looked at while the folder holding it is still open: its /proc path needs the descriptor.
      const link =
        (code === 'ELOOP' || code === 'ENOTDIR') &&
        lstatSync(within(folder, name), { throwIfNoEntry: false })?.isSymbolicLink();
      closeSync(folder);
      if (code === 'ENOENT') return 'missing';
      if (code === 'ELOOP' || code === 'ENOTDIR') return link ? 'link' : 'not-a-folder';
      throw error;
    }
    closeSync(folder);
    folder = next;
  }
  return folder;
}

function describe(entry: Dirent, at: string): FolderEntry {
  if (entry.isDirectory()) return { name: entry.name, kind: 'folder', size: 0 };
  if (entry.isSymbolicLink()) {
    let link = '?';
    try {
      link = readlinkSync(at);
    } catch {
      // Gone since the listing.
    }
    return { name: entry.name, kind: 'link', size: 0, link };
  }
  if (!entry.isFile()) return { name: entry.name, kind: 'other', size: 0 };
  // lstat: the entry itself, never what a link put at its name since would lead to.
  return { name: entry.name, kind: 'file', size: lstatSync(at, { throwIfNoEntry: false })?.size ?? 0 };
}

async function readFolderByPath(absolute: string): Promise<FolderEntry[] | FolderRefusal> {
  let entries: Dirent[];
  try {
    entries = await fs.readdir(absolute, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return 'missing';
    if (code === 'ENOTDIR') return 'not-a-folder';
    throw error;
  }
  return entries.map((entry) => describe(entry, path.join(absolute, entry.name)));
}
