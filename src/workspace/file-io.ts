import { readConfined, writeConfined } from './confined-files.js';
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

/**
 * The local disk: binary files and folders refused, writes atomic, every open confined by the
 * kernel (see confined-files.ts), so a link swapped in after the check cannot lead out.
 */
export const diskFiles: WorkspaceFiles = {
  read: readTextFile,
  write: writeConfined,
};

/** A file's text, or undefined when it does not exist. Refuses folders and binary files clearly. */
async function readTextFile(target: ResolvedPath): Promise<string | undefined> {
  const buffer = await readConfined(target);
  if (buffer === undefined) return undefined;
  if (buffer.subarray(0, 8_192).includes(0)) {
    throw new WorkspaceError(
      'INVALID_INPUT',
      `"${target.relative}" is a binary file (${buffer.length} bytes); these tools read and edit text only.`,
      { data: { path: target.relative, bytes: buffer.length } },
    );
  }
  return buffer.toString('utf8');
}
