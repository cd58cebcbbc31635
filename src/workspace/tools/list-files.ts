import path from 'node:path';
import * as z from 'zod';
import { readFolderConfined } from '../confined-folders.js';
import { WorkspaceError } from '../errors.js';
import { GitignoreFilter, readRules } from '../project-files.js';
import { workspaceTool, type WorkspaceTool, type WorkspaceToolContext } from '../workspace-tool.js';

const DESCRIPTION = `Lists one folder of the project (default: the project folder itself): folders end in "/", files show their size. .git and what .gitignore excludes are left out. Use glob to find files by pattern across folders.`;

export const ListFilesInputSchema = z.strictObject({
  path: z.string().min(1).optional().describe('The folder, relative to the project folder (default ".").'),
});

export function listFilesTool(context: WorkspaceToolContext): WorkspaceTool {
  return workspaceTool(
    { name: 'list_files', description: DESCRIPTION, schema: ListFilesInputSchema, permission: 'files-read' },
    async (input) => {
      const target = await context.paths.resolveForRead(input.path ?? '.');
      // Read through the held folder (confined-folders.ts): a folder swapped for a link since the check shows nothing outside.
      const entries = await readFolderConfined(context.paths.root, target.relative);
      if (entries === 'missing')
        throw new WorkspaceError('NOT_FOUND', `"${target.relative}" does not exist.`, {
          data: { path: target.relative },
        });
      if (entries === 'not-a-folder')
        throw new WorkspaceError('INVALID_INPUT', `"${target.relative}" is a file, not a folder; use read_file.`, {
          data: { path: target.relative },
        });
      if (entries === 'link')
        throw new WorkspaceError(
          'PATH_OUTSIDE_PROJECT',
          `"${target.relative}" was replaced by a symbolic link while it was being listed, so it was not read; list it again, or list the folder the link leads to.`,
          { data: { path: target.relative } },
        );
      const nested = target.relative === '.' ? [] : [`${target.relative}/.gitignore`];
      const filter = await GitignoreFilter.load(
        context.paths,
        await readRules(path.join(context.paths.root, '.gitignore')),
        nested,
      );
      const lines: string[] = [];
      const sorted = entries.sort((a, b) => a.name.localeCompare(b.name));
      let skipped = 0;
      for (const entry of sorted) {
        const relative = target.relative === '.' ? entry.name : `${target.relative}/${entry.name}`;
        if (filter.ignores(relative, entry.kind === 'folder')) continue;
        if (lines.length >= context.limits.entries) {
          skipped += 1;
          continue;
        }
        if (entry.kind === 'folder') lines.push(`${entry.name}/`);
        else if (entry.kind === 'link') lines.push(`${entry.name} -> ${entry.link ?? '?'}`);
        else lines.push(`${entry.name}  (${entry.size} bytes)`);
      }
      if (skipped > 0) lines.push(`[… ${skipped} more entries not shown]`);
      return {
        content: lines.length === 0 ? `(${target.relative} is empty)` : lines.join('\n'),
        data: { path: target.relative, entries: lines.length },
      };
    },
  );
}
