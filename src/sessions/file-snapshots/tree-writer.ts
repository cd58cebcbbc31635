import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { TreeChange } from './object-reader.js';

/** The name a file is written under before it is renamed over its path, beside it (same folder, same disk). */
export function stagingName(projectPath: string): string {
  return path.join(path.dirname(projectPath), `.${path.basename(projectPath)}.parley-restore`);
}

/**
 * Puts `changes` into the work tree at `root`. Each file is written whole to a staging name beside
 * it and renamed into place, so a file is only ever its old or its new bytes; deletions go first
 * (deepest paths first, emptied folders after them) so a path that turns from a folder into a file,
 * or back, has room. `onStep` is called after each path (tests stop a process there).
 */
export async function writeChanges(
  root: string,
  changes: readonly TreeChange[],
  contents: ReadonlyMap<string, Buffer>,
  onStep?: (projectPath: string) => Promise<void> | void,
): Promise<void> {
  const deletions = changes.filter((change) => change.status === 'D').sort((a, b) => depth(b.path) - depth(a.path));
  const writes = changes.filter((change) => change.status !== 'D');
  for (const change of deletions) {
    const target = path.join(root, change.path);
    await fs.rm(target, { force: true });
    await removeEmptyFolders(root, path.dirname(target));
    await onStep?.(change.path);
  }
  for (const change of writes) {
    // A submodule is a pointer to another repository's commit: there are no bytes of it to write.
    if (change.mode === '160000') continue;
    const target = path.join(root, change.path);
    const staging = stagingName(target);
    await fs.mkdir(path.dirname(target), { recursive: true });
    await fs.rm(staging, { force: true });
    const bytes = contents.get(change.blob);
    if (bytes === undefined) throw new Error(`no content for ${change.path} (${change.blob})`);
    if (change.mode === '120000') {
      await fs.symlink(bytes.toString('utf8'), staging);
    } else {
      const mode = change.mode === '100755' ? 0o755 : 0o644;
      await fs.writeFile(staging, bytes, { mode });
      // The umask may have taken bits off the mode given at creation.
      await fs.chmod(staging, mode);
    }
    // A folder where the file goes (deleted above only when git knew it) is left by nothing else.
    await fs.rename(staging, target).catch(async (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EISDIR' && error.code !== 'ENOTEMPTY' && error.code !== 'EEXIST') throw error;
      await fs.rm(target, { recursive: true, force: true });
      await fs.rename(staging, target);
    });
    await onStep?.(change.path);
  }
}

/** Removes the staging files a restore cut short left beside `changes`' paths. */
export async function removeStaging(root: string, paths: readonly string[]): Promise<void> {
  for (const projectPath of paths) await fs.rm(stagingName(path.join(root, projectPath)), { force: true });
}

async function removeEmptyFolders(root: string, folder: string): Promise<void> {
  let current = folder;
  while (current.startsWith(root + path.sep)) {
    try {
      await fs.rmdir(current);
    } catch {
      return;
    }
    current = path.dirname(current);
  }
}

function depth(projectPath: string): number {
  return projectPath.split('/').length;
}
