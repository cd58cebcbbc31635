import * as z from 'zod';
import { WorkspaceError } from '../errors.js';
import { unifiedDiff } from '../file-diff.js';
import { diskFiles } from '../file-io.js';
import { gate } from '../permission-gate.js';
import { workspaceTool, type WorkspaceTool, type WorkspaceToolContext } from '../workspace-tool.js';

const DESCRIPTION = `Changes part of a text file by exact string replacement: old_string must appear in the file exactly as written (whitespace and indentation included, without read_file's line numbers) and, unless replace_all is true, exactly once; include enough surrounding lines to make it unique. Fails, changing nothing, when the text is absent or not unique. Returns the change as a unified diff. Create new files with write_file.`;

export const EditFileInputSchema = z.strictObject({
  path: z.string().min(1).describe('The file, relative to the project folder.'),
  old_string: z.string().min(1).describe('The exact text to replace.'),
  new_string: z.string().describe('The text to put in its place.'),
  replace_all: z.boolean().optional().describe('Replace every occurrence (default: old_string must occur once).'),
});

export function editFileTool(context: WorkspaceToolContext): WorkspaceTool {
  return workspaceTool(
    { name: 'edit_file', description: DESCRIPTION, schema: EditFileInputSchema, permission: 'files-write' },
    async (input, signal, toolUseId) => {
      const target = await context.paths.resolveForWrite(input.path);
      const files = context.files ?? diskFiles;
      const before = await files.read(target);
      if (before === undefined)
        throw new WorkspaceError('NOT_FOUND', `"${target.relative}" does not exist; create it with write_file.`, {
          data: { path: target.relative },
        });
      if (input.old_string === input.new_string)
        throw new WorkspaceError(
          'INVALID_INPUT',
          'old_string and new_string are the same; there is nothing to change.',
          { data: { path: target.relative } },
        );
      const after = replaced(before, input.old_string, input.new_string, input.replace_all ?? false, target.relative);
      const diff = unifiedDiff(target.relative, before, after.text);
      const refusal = await gate(
        context,
        {
          tool: 'edit_file',
          kind: 'edit',
          title: `Edit ${target.relative}`,
          path: target.relative,
          diff,
          scopeKey: 'tool:edit_file',
          allowAlwaysScope: 'every edit_file call in this session',
        },
        signal,
        toolUseId,
      );
      if (refusal) return refusal;
      // The user may have taken a while: the edit is made only to the text that was shown to them.
      if ((await files.read(target)) !== before) {
        throw new WorkspaceError(
          'FILE_CHANGED',
          `"${target.relative}" changed while the edit waited for approval; nothing was written. Read it again and redo the edit.`,
          { data: { path: target.relative } },
        );
      }
      await files.write(target, after.text);
      return {
        content: `Edited ${target.relative} (${after.count} replacement${after.count === 1 ? '' : 's'}):\n${diff}`,
        data: { path: target.relative, diff },
      };
    },
  );
}

function replaced(
  text: string,
  oldString: string,
  newString: string,
  all: boolean,
  shown: string,
): { text: string; count: number } {
  const count = text.split(oldString).length - 1;
  if (count === 0) {
    throw new WorkspaceError(
      'EDIT_NO_MATCH',
      `old_string was not found in "${shown}"; nothing was changed. Read the file again and copy the text exactly (whitespace included, without line numbers).`,
      {
        data: { path: shown },
      },
    );
  }
  if (count > 1 && !all) {
    throw new WorkspaceError(
      'EDIT_NOT_UNIQUE',
      `old_string occurs ${count} times in "${shown}"; nothing was changed. Include more surrounding lines so it occurs once, or set replace_all to change every occurrence.`,
      {
        data: { path: shown, occurrences: count },
      },
    );
  }
  // split/join, not String.replace: `$&` and friends in new_string must stay literal.
  return {
    text: all ? text.split(oldString).join(newString) : spliceOnce(text, oldString, newString),
    count: all ? count : 1,
  };
}

function spliceOnce(text: string, oldString: string, newString: string): string {
  const at = text.indexOf(oldString);
  return text.slice(0, at) + newString + text.slice(at + oldString.length);
}
