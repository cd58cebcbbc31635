import { stat } from 'node:fs/promises';
import { diskFiles, type WorkspaceFiles } from '../workspace/index.js';
import type { ClientFiles } from './client-bridge.js';

/**
 * The workspace file tools' reader and writer when the editor offers `fs/*`: read_file and
 * edit_file see the editor's buffers (unsaved changes included) and edits land in the editor.
 * What the editor does not offer uses the disk. Paths arrive confined by the workspace (real,
 * absolute, inside the project folder), which is what ACP asks for.
 */
export function editorFilesOf(files: ClientFiles): WorkspaceFiles {
  return {
    async read(target) {
      if (!files.offers.read) return diskFiles.read(target);
      let text: string;
      try {
        text = await files.readTextFile(target.absolute);
      } catch (error) {
        // Editors answer a file that does not exist with an error (or empty text): the disk says which it is.
        if (!(await existsOnDisk(target.absolute))) return undefined;
        throw new Error(
          `the editor could not read ${target.relative}: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
      return text === '' && !(await existsOnDisk(target.absolute)) ? undefined : text;
    },
    async write(target, content) {
      if (!files.offers.write) return diskFiles.write(target, content);
      await files.writeTextFile(target.absolute, content);
    },
  };
}

async function existsOnDisk(absolute: string): Promise<boolean> {
  return stat(absolute).then(
    () => true,
    () => false,
  );
}
