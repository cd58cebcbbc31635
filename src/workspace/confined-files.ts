import { randomUUID } from 'node:crypto';
import {
  closeSync,
  constants,
  existsSync,
  fchmodSync,
  fstatSync,
  fsync,
  lstatSync,
  mkdirSync,
  openSync,
  promises as fs,
  readFile,
  readlinkSync,
  renameSync,
  unlinkSync,
  writeFile,
} from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkspaceError } from './errors.js';
import { protectedFolderError, type ResolvedPath } from './workspace-paths.js';

/**
 * Opening a confined path so that the kernel, not an earlier check, keeps it inside the project.
 * `WorkspacePaths` checks a path first (clear errors, real paths), but a command running at the
 * same time can swap a component for a symbolic link between that check and the open. So the disk
 * is reached by descending from the project folder one component at a time: each is opened
 * relative to the folder held before it, through `/proc/self/fd/<fd>/<name>` (Node has no
 * `openat`; that magic link is the held folder itself, so a rename of an earlier component cannot
 * redirect the descent), with `O_NOFOLLOW`, so a link is never followed by the kernel. A link met
 * on the way is read and followed here only when it leads inside the project, by descending again
 * from the project folder; one leading out is refused. Temporary files of atomic writes are
 * created and renamed inside the held folder the same way.
 *
 * Without `/proc` (macOS, Windows) the descent cannot be made: files are opened by their checked
 * real path, and a link swapped in after the check is followed, as the check alone allows.
 */
export const DESCENT = process.platform === 'linux' && existsSync('/proc/self/fd');

/** Links followed for one path before it is refused, as the kernel's own limit. */
const MAX_LINKS = 40;

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = constants;

// The descent's opens, closes and looks are synchronous: each is a system call of microseconds on
// metadata, and a trip through libuv's thread pool cost more than the call (about +0.3 ms a read
// when they were asynchronous). Contents are still read, written and synced asynchronously.
const readWhole = promisify((fd: number, done: (error: NodeJS.ErrnoException | null, data: Buffer) => void) =>
  readFile(fd, done),
);
const writeWhole = promisify((fd: number, text: string, done: (error: NodeJS.ErrnoException | null) => void) =>
  writeFile(fd, text, 'utf8', done),
);
const syncToDisk = promisify(fsync);

/** A file's bytes, or undefined when it does not exist; a folder or a device is refused. */
export async function readConfined(target: ResolvedPath): Promise<Buffer | undefined> {
  if (!DESCENT) return readByPath(target);
  for (let hops = 0; hops <= MAX_LINKS; hops++) {
    let located: Located;
    try {
      located = locate(target, { createFolders: false });
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return undefined;
      throw error;
    }
    let file: number;
    try {
      // O_NONBLOCK: a FIFO planted in the project opens at once (and is refused below) instead of hanging.
      file = openSync(within(located.folder, located.name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (error) {
      if (codeOf(error) === 'ENOENT') return undefined;
      // A link put there after the look: look again.
      if (codeOf(error) === 'ELOOP') continue;
      throw error;
    } finally {
      closeSync(located.folder);
    }
    try {
      const stats = fstatSync(file);
      if (stats.isDirectory()) throw folderError(target);
      if (!stats.isFile())
        throw new WorkspaceError(
          'INVALID_INPUT',
          `"${target.relative}" is not a regular file (a FIFO, socket or device); these tools read text files only.`,
          { data: { path: target.relative } },
        );
      return await readWhole(file);
    } finally {
      closeSync(file);
    }
  }
  throw loopError(target);
}

/**
 * Replaces (or creates) a file by write-temp-then-rename in its folder, keeping its mode, so a
 * crash leaves the old file or the new one, never half of one. Missing folders are created.
 */
export async function writeConfined(target: ResolvedPath, content: string): Promise<void> {
  if (!DESCENT) return writeByPath(target, content);
  for (let hops = 0; hops <= MAX_LINKS; hops++) {
    const located = locate(target, { createFolders: true });
    try {
      const existing = lstatSync(within(located.folder, located.name), { throwIfNoEntry: false });
      if (existing?.isSymbolicLink()) continue;
      if (existing?.isDirectory()) throw folderError(target);
      const mode = existing?.isFile() ? existing.mode & 0o7777 : undefined;
      const temporary = within(located.folder, `.${located.name}.parley-${randomUUID().slice(0, 8)}.tmp`);
      const file = openSync(temporary, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode ?? 0o666);
      try {
        try {
          await writeWhole(file, content);
          await syncToDisk(file);
          if (mode !== undefined) fchmodSync(file, mode);
        } finally {
          closeSync(file);
        }
        // Both names are in the held folder; rename replaces a link put at the name, never its target.
        renameSync(temporary, within(located.folder, located.name));
      } catch (error) {
        try {
          unlinkSync(temporary);
        } catch {
          // Renamed already, or never made.
        }
        throw error;
      }
      return;
    } finally {
      closeSync(located.folder);
    }
  }
  throw loopError(target);
}

/** The folder holding the path's last component, held open, reached without following a link. */
interface Located {
  /** The folder's descriptor; the caller closes it. */
  folder: number;
  /** The last component (`.` for the project folder itself); not a link when looked at. */
  name: string;
}

function locate(target: ResolvedPath, options: { createFolders: boolean }): Located {
  let components = componentsOf(target.relative);
  for (let hops = 0; hops <= MAX_LINKS; hops++) {
    // A write checked the path it was given; a link met since may lead into .git/ or the data folder.
    if (options.createFolders) refuseProtected(target, components);
    const step = descend(target.root, components, options.createFolders);
    if ('folder' in step) return step;
    components = linkedComponents(target, step);
  }
  throw loopError(target);
}

/** Where a descent stopped at a symbolic link: the folders before it, its text, what came after. */
interface LinkMet {
  before: string[];
  link: string;
  after: string[];
}

function descend(root: string, components: string[], createFolders: boolean): Located | LinkMet {
  let folder = openSync(root, O_RDONLY | O_DIRECTORY);
  try {
    let retries = 0;
    for (let index = 0; index < components.length - 1; index++) {
      const name = components[index]!;
      const at = within(folder, name);
      let next: number;
      try {
        next = openSync(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch (error) {
        const code = codeOf(error);
        if (code === 'ELOOP' || code === 'ENOTDIR') {
          const link = linkText(at);
          if (link === undefined) throw error;
          closeSync(folder);
          return { before: components.slice(0, index), link, after: components.slice(index + 1) };
        }
        if (code === 'ENOENT' && createFolders && retries++ < MAX_LINKS) {
          // mkdir does not follow a link at its last component; what it made is opened as any folder.
          try {
            mkdirSync(at);
          } catch (made) {
            if (codeOf(made) !== 'EEXIST') throw made;
          }
          index--;
          continue;
        }
        throw error;
      }
      closeSync(folder);
      folder = next;
    }
    const name = components.at(-1) ?? '.';
    const link = lstatSync(within(folder, name), { throwIfNoEntry: false })?.isSymbolicLink()
      ? linkText(within(folder, name))
      : undefined;
    if (link !== undefined) {
      closeSync(folder);
      return { before: components.slice(0, -1), link, after: [] };
    }
    return { folder, name };
  } catch (error) {
    try {
      closeSync(folder);
    } catch {
      // Closed before the error.
    }
    throw error;
  }
}

function linkText(at: string): string | undefined {
  try {
    return readlinkSync(at);
  } catch {
    return undefined;
  }
}

/** The components a link leads to, from the project folder; refused when it leads out. */
function linkedComponents(target: ResolvedPath, met: LinkMet): string[] {
  const absolute = path.resolve(target.root, ...met.before, met.link, ...met.after);
  const relative = path.relative(target.root, absolute);
  if (relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative))
    throw new WorkspaceError(
      'PATH_OUTSIDE_PROJECT',
      `"${target.relative}" leads outside the project folder through a symbolic link (to ${absolute}); only files inside ${target.root} can be used.`,
      { data: { path: target.relative, resolved: absolute, root: target.root } },
    );
  return componentsOf(relative.split(path.sep).join('/'));
}

function refuseProtected(target: ResolvedPath, components: readonly string[]): void {
  const reached = components.join('/');
  const guarded = (target.protectedFolders ?? []).find(
    (folder) => folder === '.' || reached === folder || reached.startsWith(`${folder}/`),
  );
  if (guarded !== undefined) throw protectedFolderError(target.relative, guarded);
}

function componentsOf(relative: string): string[] {
  return relative.split('/').filter((component) => component !== '' && component !== '.');
}

/** The path of `name` inside the held folder `folder`, for the kernel to reach through the folder itself. */
export function within(folder: number, name: string): string {
  return `/proc/self/fd/${folder}/${name}`;
}

function codeOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

function folderError(target: ResolvedPath): WorkspaceError {
  return new WorkspaceError(
    'INVALID_INPUT',
    `"${target.relative}" is a folder, not a file; use list_files to see what it holds.`,
    { data: { path: target.relative } },
  );
}

function loopError(target: ResolvedPath): WorkspaceError {
  return new WorkspaceError(
    'INVALID_INPUT',
    `"${target.relative}" goes through more than ${MAX_LINKS} symbolic links (a loop?); use the path of the file itself.`,
    { data: { path: target.relative } },
  );
}

async function readByPath(target: ResolvedPath): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(target.absolute);
  } catch (error) {
    if (codeOf(error) === 'ENOENT') return undefined;
    if (codeOf(error) === 'EISDIR') throw folderError(target);
    throw error;
  }
}

async function writeByPath(target: ResolvedPath, content: string): Promise<void> {
  const folder = path.dirname(target.absolute);
  await fs.mkdir(folder, { recursive: true });
  const mode = await fs.stat(target.absolute).then(
    (stats) => stats.mode & 0o7777,
    () => undefined,
  );
  const temporary = path.join(folder, `.${path.basename(target.absolute)}.parley-${randomUUID().slice(0, 8)}.tmp`);
  try {
    const handle = await fs.open(temporary, 'w', mode ?? 0o666);
    try {
      await handle.writeFile(content, 'utf8');
      await handle.sync();
    } finally {
      await handle.close();
    }
    if (mode !== undefined) await fs.chmod(temporary, mode);
    await fs.rename(temporary, target.absolute);
  } catch (error) {
    await fs.rm(temporary, { force: true });
    throw error;
  }
}
